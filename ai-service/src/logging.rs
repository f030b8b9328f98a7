//! Logging set-up shared by `wizard-ai` and `wizard-server`: `LOG_LEVEL` as a filter,
//! `LOG_FORMAT` text or JSON lines on standard output, and colour only for a terminal.

use std::io::IsTerminal;

use wizard_core::vocabulary::config::LogFormat;

/// Whether text logs are coloured: only when standard output (where they go) is a
/// terminal and `no_color` (the value of `NO_COLOR`, <https://no-color.org>) is unset or
/// empty. `docker logs`, files and pipes get plain text.
pub fn colour(stdout_is_terminal: bool, no_color: Option<&str>) -> bool {
    stdout_is_terminal && no_color.is_none_or(str::is_empty)
}

/// Starts the global subscriber; an error names the bad `LOG_LEVEL`.
pub fn init(level: &str, format: LogFormat) -> Result<(), String> {
    let filter = tracing_subscriber::EnvFilter::try_new(level)
        .map_err(|e| format!("bad setting LOG_LEVEL: {level:?} {e}"))?;
    let no_color = std::env::var("NO_COLOR").ok();
    let ansi = colour(std::io::stdout().is_terminal(), no_color.as_deref());
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(ansi);
    let result = match format {
        LogFormat::Json => builder.json().try_init(),
        LogFormat::Text => builder.try_init(),
    };
    result.map_err(|e| format!("cannot start logging: {e}"))
}

#[cfg(test)]
mod tests {
    use super::colour;

    #[test]
    fn colour_only_on_a_terminal_without_no_color() {
        let cases = [
            (true, None, true),
            (true, Some(""), true),
            (true, Some("1"), false),
            (false, None, false),
            (false, Some("1"), false),
        ];
        for (terminal, no_color, want) in cases {
            assert_eq!(colour(terminal, no_color), want, "{terminal} {no_color:?}");
        }
    }
}
