//! The run's settings checked before anything starts: the combinations the generator
//! refuses to run, each with the flag to change.

use crate::Settings;

/// `Err` names the flags at fault.
pub(crate) fn validate(s: &Settings) -> Result<(), String> {
    if s.humans == 0 || s.humans > s.seats || !(3..=6).contains(&s.seats) {
        return Err(format!(
            "--humans {} --seats {}: 1 <= humans <= seats, 3 <= seats <= 6",
            s.humans, s.seats
        ));
    }
    if s.per_ip == 0 {
        return Err("--per-ip must be at least 1".into());
    }
    let v4_loopback = matches!(s.addr.ip(), std::net::IpAddr::V4(ip) if ip.is_loopback());
    if s.attack.is_some() && !v4_loopback {
        return Err("attack modes only run against 127.0.0.0/8".into());
    }
    if s.phases > 0 && (s.attack.is_none() || s.arrival_rate > 0.0 || s.idle > 0) {
        return Err("--phases needs --attack and steady --games".into());
    }
    if s.phases > 100 || s.phase_duration.is_zero() {
        return Err("--phases: at most 100, with a --phase-duration above 0".into());
    }
    if s.attack_ips > 60_000 {
        return Err("--attack-ips: at most 60000".into());
    }
    Ok(())
}
