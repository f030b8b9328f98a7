//! One known setting's value on its way to a field, and its parsers: counts, durations,
//! rates, shares, flags, origins, CIDR lists and `ws://` URLs.

use std::str::FromStr;

use crate::vocabulary::time::US_PER_SEC;

use super::{Component, ConfigError, IpCidr, SETTINGS};

/// Longest duration accepted, in seconds: about 31 years, far inside `u64` microseconds
/// and exact in `f64`.
const DURATION_SECS_MAX: f64 = 1e9;

/// One known, non-empty value on its way to a field.
pub(super) struct Raw<'a> {
    pub(super) name: &'static str,
    pub(super) text: &'a str,
}

impl<'a> Raw<'a> {
    /// The setting `name` of `component` with a non-empty value, if it is one.
    pub(super) fn find(component: Component, name: &str, text: &'a str) -> Option<Raw<'a>> {
        let setting = SETTINGS
            .iter()
            .find(|s| s.component == component && s.name == name)?;
        let text = text.trim();
        (!text.is_empty()).then_some(Raw {
            name: setting.name,
            text,
        })
    }

    fn error(&self, reason: impl Into<String>) -> ConfigError {
        ConfigError {
            variable: self.name,
            value: self.text.to_owned(),
            reason: reason.into(),
        }
    }

    pub(super) fn parsed<T: FromStr>(&self, reason: &str) -> Result<T, ConfigError> {
        self.text.parse().map_err(|_| self.error(reason))
    }

    /// A whole number of at least `min`.
    pub(super) fn count<T: TryFrom<u64>>(&self, min: u64) -> Result<T, ConfigError> {
        let n: u64 = match self.text.parse() {
            Ok(n) => n,
            Err(_) if self.text.bytes().all(|b| b.is_ascii_digit()) => {
                return Err(self.error("is too large"));
            }
            Err(_) => return Err(self.error("is not a whole number")),
        };
        if n < min {
            return Err(self.error(format!("must be at least {min}")));
        }
        T::try_from(n).map_err(|_| self.error("is too large"))
    }

    /// Seconds (fractions allowed) as microseconds, at least `min_us`.
    pub(super) fn duration_us(&self, min_us: u64) -> Result<u64, ConfigError> {
        let secs = self.number("is not a number of seconds")?;
        if secs < 0.0 {
            return Err(self.error("must not be negative"));
        }
        if secs > DURATION_SECS_MAX {
            return Err(self.error(format!("is too large (at most {DURATION_SECS_MAX} s)")));
        }
        // At most 1e15 after scaling, so the cast neither saturates nor loses precision.
        let us = (secs * US_PER_SEC as f64).round() as u64;
        if us < min_us {
            return Err(self.error("must be greater than 0"));
        }
        Ok(us)
    }

    /// A rate per second or minute: finite and greater than 0.
    pub(super) fn rate(&self) -> Result<f64, ConfigError> {
        let rate = self.number("is not a number")?;
        if rate <= 0.0 {
            return Err(self.error("must be greater than 0"));
        }
        Ok(rate)
    }

    /// A share between 0 and 1 inclusive.
    pub(super) fn share(&self) -> Result<f64, ConfigError> {
        let share = self.number("is not a number")?;
        if !(0.0..=1.0).contains(&share) {
            return Err(self.error("must be between 0 and 1"));
        }
        Ok(share)
    }

    fn number(&self, reason: &str) -> Result<f64, ConfigError> {
        match self.text.parse::<f64>() {
            Ok(x) if x.is_finite() => Ok(x),
            _ => Err(self.error(reason)),
        }
    }

    pub(super) fn flag(&self) -> Result<bool, ConfigError> {
        match self.text.to_ascii_lowercase().as_str() {
            "1" | "true" => Ok(true),
            "0" | "false" => Ok(false),
            _ => Err(self.error("is not 1, 0, true or false")),
        }
    }

    /// Comma-separated origins like `https://example.com`; empty items are skipped.
    pub(super) fn origins(&self) -> Result<Vec<String>, ConfigError> {
        let mut origins = Vec::new();
        for item in self
            .text
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
        {
            let origin = item.strip_suffix('/').unwrap_or(item);
            let host = origin.split_once("://").map_or("", |(_, host)| host);
            if host.is_empty() || host.contains('/') || origin.contains(char::is_whitespace) {
                return Err(self.error(format!(
                    "has {item:?}, which is not an origin like https://example.com"
                )));
            }
            origins.push(origin.to_owned());
        }
        Ok(origins)
    }

    pub(super) fn cidrs(&self) -> Result<Vec<IpCidr>, ConfigError> {
        let items = self
            .text
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty());
        items
            .map(|item| {
                item.parse()
                    .map_err(|e| self.error(format!("has {item:?}: {e}")))
            })
            .collect()
    }

    /// A `ws://` URL. `wss://` is refused here, by name: the AI service has no TLS
    /// client, and a URL it cannot open would only make it retry forever.
    pub(super) fn ws_url(&self) -> Result<String, ConfigError> {
        if self.text.starts_with("wss://") {
            return Err(self.error(
                "is wss://, which the AI service does not speak: give the server's ws:// \
                 address on a private network (TLS is for players, at the proxy)",
            ));
        }
        match self.text.strip_prefix("ws://") {
            Some(rest) if !rest.is_empty() && !rest.starts_with('/') => Ok(self.text.to_owned()),
            _ => Err(self.error("is not a ws:// URL")),
        }
    }
}
