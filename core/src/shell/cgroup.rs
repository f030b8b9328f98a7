//! Pure parsers for the cgroup files the load probe reads: CPU quota, CPU statistics and
//! where the process's own CPU cgroup lives.
//!
//! The shell reads the files and hands their text here; nothing in this module touches
//! the file system. Garbage gives a [`CgroupError`], never a panic. Both cgroup v1
//! (`cpu.cfs_quota_us`, `cpuacct.usage`, `throttled_time` in nanoseconds) and v2
//! (`cpu.max`, `cpu.stat` in microseconds) are understood.

use std::fmt;
use std::path::PathBuf;

/// Default period of the CFS bandwidth controller, used when `cpu.max` omits it.
pub const CPU_PERIOD_US_DEFAULT: u64 = 100_000;

/// How much CPU time the cgroup may use per period.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CpuQuota {
    /// `None`: no limit (`max` in v2, `-1` in v1).
    pub quota_us: Option<u64>,
    pub period_us: u64,
}

impl CpuQuota {
    /// The quota in cores (e.g. 0.15 or 2.0); `None` when unlimited.
    pub fn cores(&self) -> Option<f64> {
        let quota_us = self.quota_us?;
        (self.period_us > 0).then(|| quota_us as f64 / self.period_us as f64)
    }
}

/// Counters from `cpu.stat` (v1 or v2), in microseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuStat {
    /// Enforcement periods elapsed; 0 when the file has no bandwidth counters (no quota).
    pub nr_periods: u64,
    /// Periods in which the cgroup was throttled.
    pub nr_throttled: u64,
    /// Total time throttled (`throttled_usec`, or v1 `throttled_time` / 1000).
    pub throttled_us: Option<u64>,
    /// CPU time used (`usage_usec`, or `user_usec + system_usec`); v1 has it in
    /// `cpuacct.usage` instead, see [`parse_cpuacct_usage_us`].
    pub usage_us: Option<u64>,
}

/// Text that is not what a cgroup file should contain.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CgroupError {
    /// `text` (shortened) should have been a number for `what`.
    BadNumber { what: &'static str, text: String },
    /// A line (shortened) of `what` does not have the expected shape.
    Malformed { what: &'static str, line: String },
    /// `what` has none of the keys this parser needs.
    Missing { what: &'static str },
    /// `/proc/self/cgroup` lists neither a v1 `cpu` controller nor a v2 hierarchy.
    NoCpuCgroup,
    /// The mount table has no mount for the hierarchy `/proc/self/cgroup` names.
    NotMounted,
}

impl fmt::Display for CgroupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CgroupError::BadNumber { what, text } => {
                write!(f, "{what}: {text:?} is not a valid number")
            }
            CgroupError::Malformed { what, line } => write!(f, "{what}: malformed line {line:?}"),
            CgroupError::Missing { what } => write!(f, "{what}: no known keys"),
            CgroupError::NoCpuCgroup => {
                f.write_str("/proc/self/cgroup: no cpu controller and no cgroup v2 entry")
            }
            CgroupError::NotMounted => {
                f.write_str("mount table: the cpu cgroup hierarchy is not mounted")
            }
        }
    }
}

impl std::error::Error for CgroupError {}

/// At most this many characters of the offending text go into an error.
const ERROR_TEXT_CHARS_MAX: usize = 80;

fn shorten(text: &str) -> String {
    text.chars().take(ERROR_TEXT_CHARS_MAX).collect()
}

fn number(what: &'static str, text: &str) -> Result<u64, CgroupError> {
    // u64's parser accepts a leading '+', which no kernel file writes.
    let digits = !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit());
    match text.parse() {
        Ok(n) if digits => Ok(n),
        _ => Err(CgroupError::BadNumber {
            what,
            text: shorten(text),
        }),
    }
}

fn positive(what: &'static str, text: &str) -> Result<u64, CgroupError> {
    match number(what, text)? {
        0 => Err(CgroupError::BadNumber {
            what,
            text: shorten(text),
        }),
        n => Ok(n),
    }
}

/// Parses v2 `cpu.max`: `"max 100000"` or `"15000 100000"` (a lone quota takes the
/// default period, as when writing the file).
pub fn parse_cpu_max(text: &str) -> Result<CpuQuota, CgroupError> {
    const WHAT: &str = "cpu.max";
    let fields: Vec<&str> = text.split_whitespace().collect();
    let (quota, period) = match fields.as_slice() {
        [quota] => (*quota, None),
        [quota, period] => (*quota, Some(*period)),
        _ => {
            return Err(CgroupError::Malformed {
                what: WHAT,
                line: shorten(text.trim()),
            });
        }
    };
    let quota_us = match quota {
        "max" => None,
        q => Some(positive(WHAT, q)?),
    };
    let period_us = period.map_or(Ok(CPU_PERIOD_US_DEFAULT), |p| positive(WHAT, p))?;
    Ok(CpuQuota {
        quota_us,
        period_us,
    })
}

/// Parses v1 `cpu.cfs_quota_us` (`"-1"` = unlimited, or microseconds) and
/// `cpu.cfs_period_us`.
pub fn parse_cfs_quota(quota_text: &str, period_text: &str) -> Result<CpuQuota, CgroupError> {
    let quota = quota_text.trim();
    let quota_us = match quota {
        "-1" => None,
        q => Some(positive("cpu.cfs_quota_us", q)?),
    };
    let period_us = positive("cpu.cfs_period_us", period_text.trim())?;
    Ok(CpuQuota {
        quota_us,
        period_us,
    })
}

/// Parses v1 `cpuacct.usage` (nanoseconds) into microseconds.
pub fn parse_cpuacct_usage_us(text: &str) -> Result<u64, CgroupError> {
    Ok(number("cpuacct.usage", text.trim())? / 1_000)
}

/// Parses `cpu.stat`, v2 (`usage_usec`, `throttled_usec`, …) or v1 (`throttled_time` in
/// nanoseconds). Unknown keys are ignored; a known key twice or with a bad value is an
/// error, and so is a file without any known key.
pub fn parse_cpu_stat(text: &str) -> Result<CpuStat, CgroupError> {
    const WHAT: &str = "cpu.stat";
    const KEYS: [&str; 7] = [
        "usage_usec",
        "user_usec",
        "system_usec",
        "nr_periods",
        "nr_throttled",
        "throttled_usec",
        "throttled_time",
    ];
    let mut values: [Option<u64>; 7] = [None; 7];
    for line in text.lines() {
        let mut fields = line.split_whitespace();
        let Some(key) = fields.next() else { continue };
        let Some(slot) = KEYS
            .iter()
            .position(|k| *k == key)
            .and_then(|i| values.get_mut(i))
        else {
            continue;
        };
        let malformed = || CgroupError::Malformed {
            what: WHAT,
            line: shorten(line.trim()),
        };
        let (Some(value), None) = (fields.next(), fields.next()) else {
            return Err(malformed());
        };
        if slot.is_some() {
            return Err(malformed());
        }
        *slot = Some(number(WHAT, value)?);
    }
    let [
        usage,
        user,
        system,
        nr_periods,
        nr_throttled,
        throttled_usec,
        throttled_time,
    ] = values;
    if values.iter().all(Option::is_none) {
        return Err(CgroupError::Missing { what: WHAT });
    }
    let split_usage = user.zip(system).map(|(u, s)| u.saturating_add(s));
    Ok(CpuStat {
        nr_periods: nr_periods.unwrap_or(0),
        nr_throttled: nr_throttled.unwrap_or(0),
        throttled_us: throttled_usec.or(throttled_time.map(|ns| ns / 1_000)),
        usage_us: usage.or(split_usage),
    })
}

/// Which cgroup version the CPU files follow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CgroupVersion {
    V1,
    V2,
}

/// One cgroup directory: where its hierarchy is mounted, and the cgroup's path below.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CgroupDir {
    /// E.g. `/sys/fs/cgroup` or `/sys/fs/cgroup/cpu,cpuacct`.
    pub mount_point: String,
    /// Relative to the mount point, without leading `/`; empty for the mount's root.
    pub path: String,
}

impl CgroupDir {
    /// The directory to read files from.
    pub fn dir(&self) -> PathBuf {
        let mut dir = PathBuf::from(&self.mount_point);
        if !self.path.is_empty() {
            dir.push(&self.path);
        }
        dir
    }
}

/// Where to read the process's CPU cgroup files.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CgroupLocation {
    pub version: CgroupVersion,
    /// Holds `cpu.max`/`cpu.stat` (v2) or `cpu.cfs_*`/`cpu.stat` (v1).
    pub cpu: CgroupDir,
    /// v1 only: holds `cpuacct.usage`; the same directory when `cpu,cpuacct` share a
    /// hierarchy, `None` when the controller is absent. v2 keeps usage in `cpu.stat`.
    pub cpuacct: Option<CgroupDir>,
}

/// One line of `/proc/self/cgroup`.
struct Membership<'a> {
    v2: bool,
    controllers: Vec<&'a str>,
    path: &'a str,
}

/// One cgroup mount from `/proc/self/mountinfo` or `/proc/mounts`.
#[derive(Debug)]
struct Mount {
    root: String,
    mount_point: String,
    v2: bool,
    controllers: Vec<String>,
}

const CGROUP_ROOT: &str = "/sys/fs/cgroup";

/// Finds the directory of the process's CPU cgroup.
///
/// `proc_self_cgroup` is `/proc/self/cgroup`; `mountinfo_or_mounts` is
/// `/proc/self/mountinfo` (or `/proc/mounts`) when readable. A v1 `cpu` controller is
/// preferred (hybrid layouts put it there), else the v2 hierarchy. Without a mount table
/// the usual mount points are assumed (`/sys/fs/cgroup/<controllers>` for v1,
/// `/sys/fs/cgroup`, or `/sys/fs/cgroup/unified` in hybrid layouts, for v2) and the
/// cgroup path is taken as relative to the hierarchy's root. With one, the real mount
/// point is used and the mount's own root is stripped from the path; a path that is not
/// below the mount's root (another cgroup namespace) resolves to the mount point.
pub fn cpu_cgroup_dir(
    proc_self_cgroup: &str,
    mountinfo_or_mounts: Option<&str>,
) -> Result<CgroupLocation, CgroupError> {
    let members = parse_memberships(proc_self_cgroup)?;
    let v1_with = |controller: &str| {
        members
            .iter()
            .find(|m| !m.v2 && m.controllers.contains(&controller))
    };
    let v1_cpu = v1_with("cpu");
    let v1_cpuacct = v1_with("cpuacct");
    let v2 = members.iter().find(|m| m.v2);
    let Some(mounts) = mountinfo_or_mounts.map(parse_mounts) else {
        if let Some(cpu) = v1_cpu {
            let cpuacct = v1_cpuacct.map(default_v1_dir);
            return Ok(CgroupLocation {
                version: CgroupVersion::V1,
                cpu: default_v1_dir(cpu),
                cpuacct,
            });
        }
        let v2 = v2.ok_or(CgroupError::NoCpuCgroup)?;
        let hybrid = members.iter().any(|m| !m.v2);
        let mount_point = if hybrid {
            format!("{CGROUP_ROOT}/unified")
        } else {
            CGROUP_ROOT.to_owned()
        };
        let cpu = CgroupDir {
            mount_point,
            path: below(v2.path, "/"),
        };
        return Ok(CgroupLocation {
            version: CgroupVersion::V2,
            cpu,
            cpuacct: None,
        });
    };
    let v1_mount = |controller: &str| {
        let candidates = mounts
            .iter()
            .filter(|m| !m.v2 && m.controllers.iter().any(|c| c == controller));
        candidates.collect::<Vec<_>>()
    };
    if let Some(cpu) = v1_cpu.and_then(|m| mounted_dir(m, &v1_mount("cpu"))) {
        let cpuacct = v1_cpuacct.and_then(|m| mounted_dir(m, &v1_mount("cpuacct")));
        return Ok(CgroupLocation {
            version: CgroupVersion::V1,
            cpu,
            cpuacct,
        });
    }
    let Some(v2) = v2 else {
        return Err(if v1_cpu.is_some() {
            CgroupError::NotMounted
        } else {
            CgroupError::NoCpuCgroup
        });
    };
    let v2_mounts: Vec<&Mount> = mounts.iter().filter(|m| m.v2).collect();
    let cpu = mounted_dir(v2, &v2_mounts).ok_or(CgroupError::NotMounted)?;
    Ok(CgroupLocation {
        version: CgroupVersion::V2,
        cpu,
        cpuacct: None,
    })
}

fn parse_memberships(text: &str) -> Result<Vec<Membership<'_>>, CgroupError> {
    let mut members = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let malformed = || CgroupError::Malformed {
            what: "/proc/self/cgroup",
            line: shorten(line),
        };
        let mut parts = line.splitn(3, ':');
        let (Some(id), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next())
        else {
            return Err(malformed());
        };
        if id.is_empty() || !id.bytes().all(|b| b.is_ascii_digit()) || !path.starts_with('/') {
            return Err(malformed());
        }
        let v2 = id.bytes().all(|b| b == b'0') && controllers.is_empty();
        let controllers = controllers.split(',').filter(|c| !c.is_empty()).collect();
        members.push(Membership {
            v2,
            controllers,
            path,
        });
    }
    if members.is_empty() {
        return Err(CgroupError::NoCpuCgroup);
    }
    Ok(members)
}

fn default_v1_dir(member: &Membership<'_>) -> CgroupDir {
    let mount_point = format!("{CGROUP_ROOT}/{}", member.controllers.join(","));
    CgroupDir {
        mount_point,
        path: below(member.path, "/"),
    }
}

/// The directory of `member` in the best of `mounts`: one whose root holds its path.
fn mounted_dir(member: &Membership<'_>, mounts: &[&Mount]) -> Option<CgroupDir> {
    let holds = |m: &&&Mount| is_below(member.path, &m.root);
    let mount = mounts.iter().find(holds).or(mounts.first())?;
    let path = below(member.path, &mount.root);
    Some(CgroupDir {
        mount_point: mount.mount_point.clone(),
        path,
    })
}

fn is_below(path: &str, root: &str) -> bool {
    let root = root.trim_end_matches('/');
    root.is_empty()
        || path == root
        || path
            .strip_prefix(root)
            .is_some_and(|rest| rest.starts_with('/'))
}

/// `path` relative to `root`, without leading `/`; empty (the mount point itself) when it
/// is not below `root` or would climb out with `..`.
fn below(path: &str, root: &str) -> String {
    if !is_below(path, root) {
        return String::new();
    }
    let rest = path.get(root.trim_end_matches('/').len()..).unwrap_or("");
    let rest = rest.trim_matches('/');
    if rest.split('/').any(|part| part == "..") {
        return String::new();
    }
    rest.to_owned()
}

/// The cgroup mounts of a mount table; other mounts and lines that do not parse are
/// skipped, since only the cgroup lines matter.
fn parse_mounts(text: &str) -> Vec<Mount> {
    text.lines()
        .filter_map(|line| parse_mountinfo_line(line).or_else(|| parse_mounts_line(line)))
        .collect()
}

/// `36 35 98:0 /root /mnt rw,noatime master:1 - cgroup cgroup rw,cpu,cpuacct`
fn parse_mountinfo_line(line: &str) -> Option<Mount> {
    let fields: Vec<&str> = line.split_whitespace().collect();
    let dash = fields.iter().position(|f| *f == "-")?;
    let (before, after) = fields.split_at(dash);
    let (root, mount_point) = (before.get(3)?, before.get(4)?);
    let (fstype, options) = (after.get(1)?, after.get(3).copied().unwrap_or(""));
    cgroup_mount(fstype, unescape(root), unescape(mount_point), options)
}

/// `cgroup /sys/fs/cgroup/cpu,cpuacct cgroup rw,nosuid,cpu,cpuacct 0 0`
fn parse_mounts_line(line: &str) -> Option<Mount> {
    let fields: Vec<&str> = line.split_whitespace().collect();
    let (mount_point, fstype, options) = (fields.get(1)?, fields.get(2)?, fields.get(3)?);
    cgroup_mount(fstype, "/".to_owned(), unescape(mount_point), options)
}

fn cgroup_mount(fstype: &str, root: String, mount_point: String, options: &str) -> Option<Mount> {
    let v2 = match fstype {
        "cgroup2" => true,
        "cgroup" => false,
        _ => return None,
    };
    let controllers = options.split(',').map(str::to_owned).collect();
    Some(Mount {
        root,
        mount_point,
        v2,
        controllers,
    })
}

/// Undoes the mount table's octal escapes (`\040` for a space).
fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        let octal = bytes
            .get(i + 1..i + 4)
            .filter(|d| b == b'\\' && d.iter().all(|c| (b'0'..=b'7').contains(c)));
        match octal.map(|d| d.iter().fold(0u32, |acc, c| acc * 8 + u32::from(c - b'0'))) {
            Some(code) if code <= 0xff => {
                out.push(code as u8);
                i += 4;
            }
            _ => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}
