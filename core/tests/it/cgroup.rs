//! The cgroup parsers against the samples in `fixtures/cgroup/`, garbage, and arbitrary text.

// A test of the core, not the core: it reads the real cgroup files.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::collections::BTreeSet;
use std::path::PathBuf;

use proptest::prelude::*;
use wizard_core::shell::cgroup::{
    CgroupDir, CgroupError, CgroupVersion, CpuQuota, CpuStat, cpu_cgroup_dir, parse_cfs_quota,
    parse_cpu_max, parse_cpu_stat, parse_cpuacct_usage_us,
};

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../fixtures/cgroup");

fn fixture(name: &str) -> String {
    let path = format!("{DIR}/{name}");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Every file under `fixtures/cgroup/`, relative to it.
fn all_fixtures() -> BTreeSet<String> {
    fn walk(dir: &PathBuf, prefix: &str, out: &mut BTreeSet<String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let entry = entry.unwrap();
            let name = format!("{prefix}{}", entry.file_name().to_string_lossy());
            if entry.file_type().unwrap().is_dir() {
                walk(&entry.path(), &format!("{name}/"), out);
            } else {
                out.insert(name);
            }
        }
    }
    let mut out = BTreeSet::new();
    walk(&PathBuf::from(DIR), "", &mut out);
    out
}

const fn quota(quota_us: Option<u64>, period_us: u64) -> CpuQuota {
    CpuQuota {
        quota_us,
        period_us,
    }
}

/// (fixture, expected) for `cpu.max`.
const CPU_MAX: &[(&str, CpuQuota)] = &[
    ("v2/cpu.max", quota(None, 100_000)),
    ("v2_limited/cpu.max", quota(Some(15_000), 100_000)),
];

/// (quota fixture, period fixture, expected) for v1.
const CFS: &[(&str, &str, CpuQuota)] = &[
    (
        "v1/cpu.cfs_quota_us",
        "v1/cpu.cfs_period_us",
        quota(None, 100_000),
    ),
    (
        "v1_limited/cpu.cfs_quota_us",
        "v1_limited/cpu.cfs_period_us",
        quota(Some(15_000), 100_000),
    ),
];

const CPU_STAT: &[(&str, CpuStat)] = &[
    // Real samples from a hybrid host: v1 without a quota, v2 root without bandwidth keys.
    (
        "v1/cpu.stat",
        CpuStat {
            nr_periods: 0,
            nr_throttled: 0,
            throttled_us: Some(0),
            usage_us: None,
        },
    ),
    (
        "v2/cpu.stat",
        CpuStat {
            nr_periods: 0,
            nr_throttled: 0,
            throttled_us: None,
            usage_us: Some(335_454_126),
        },
    ),
    (
        "v1_limited/cpu.stat",
        CpuStat {
            nr_periods: 1203,
            nr_throttled: 846,
            throttled_us: Some(71_403_920),
            usage_us: None,
        },
    ),
    (
        "v2_limited/cpu.stat",
        CpuStat {
            nr_periods: 1203,
            nr_throttled: 846,
            throttled_us: Some(71_403_920),
            usage_us: Some(8_723_310),
        },
    ),
];

const CPUACCT_USAGE: &[(&str, u64)] = &[
    ("v1/cpuacct.usage", 339_626_243),
    ("v1_limited/cpuacct.usage", 8_723_310),
];

type Expected = Result<(CgroupVersion, &'static str, Option<&'static str>), CgroupError>;

const fn found(v: CgroupVersion, cpu: &'static str, acct: Option<&'static str>) -> Expected {
    Ok((v, cpu, acct))
}

const DOCKER_V1: &str = "/sys/fs/cgroup/cpu,cpuacct/docker/4f1c2a9e7b3d";
const USER_SCOPE: &str =
    "/sys/fs/cgroup/user.slice/user-1000.slice/user@1000.service/app.slice/run-r3c1.scope";

/// (`/proc/self/cgroup` fixture, mount table fixture, expected cpu dir and cpuacct dir).
const LOCATIONS: &[(&str, Option<&str>, Expected)] = &[
    (
        "proc_self_cgroup_v1.txt",
        None,
        found(CgroupVersion::V1, DOCKER_V1, Some(DOCKER_V1)),
    ),
    (
        "proc_self_cgroup_v1.txt",
        Some("mountinfo_v1.txt"),
        found(
            CgroupVersion::V1,
            "/sys/fs/cgroup/cpu,cpuacct",
            Some("/sys/fs/cgroup/cpu,cpuacct"),
        ),
    ),
    // /proc/mounts has no mount root, so the path is taken as relative to the hierarchy.
    (
        "proc_self_cgroup_v1.txt",
        Some("mounts_v1.txt"),
        found(CgroupVersion::V1, DOCKER_V1, Some(DOCKER_V1)),
    ),
    (
        "proc_self_cgroup_v1.txt",
        Some("mountinfo_v2.txt"),
        Err(CgroupError::NotMounted),
    ),
    (
        "proc_self_cgroup_v2.txt",
        None,
        found(CgroupVersion::V2, "/sys/fs/cgroup", None),
    ),
    (
        "proc_self_cgroup_v2.txt",
        Some("mountinfo_v2.txt"),
        found(CgroupVersion::V2, "/sys/fs/cgroup", None),
    ),
    (
        "proc_self_cgroup_v2.txt",
        Some("mountinfo_v1.txt"),
        Err(CgroupError::NotMounted),
    ),
    (
        "proc_self_cgroup_v2_host.txt",
        None,
        found(CgroupVersion::V2, USER_SCOPE, None),
    ),
    (
        "proc_self_cgroup_v2_host.txt",
        Some("mountinfo_v2_host.txt"),
        found(CgroupVersion::V2, USER_SCOPE, None),
    ),
    // Real sample: cpu and cpuacct on separate v1 hierarchies next to a unified one.
    (
        "proc_self_cgroup_hybrid.txt",
        None,
        found(
            CgroupVersion::V1,
            "/sys/fs/cgroup/cpu",
            Some("/sys/fs/cgroup/cpuacct"),
        ),
    ),
    (
        "proc_self_cgroup_hybrid.txt",
        Some("mountinfo_hybrid.txt"),
        found(
            CgroupVersion::V1,
            "/sys/fs/cgroup/cpu",
            Some("/sys/fs/cgroup/cpuacct"),
        ),
    ),
];

type Resolved = Result<(CgroupVersion, String, Option<String>), CgroupError>;

fn resolve(cgroup: &str, mounts: Option<&str>) -> Resolved {
    let loc = cpu_cgroup_dir(cgroup, mounts)?;
    let dir = |d: &CgroupDir| d.dir().to_string_lossy().into_owned();
    Ok((loc.version, dir(&loc.cpu), loc.cpuacct.as_ref().map(dir)))
}

fn at(version: CgroupVersion, cpu: &str, cpuacct: Option<&str>) -> Resolved {
    Ok((version, cpu.to_owned(), cpuacct.map(str::to_owned)))
}

fn own(expected: &Expected) -> Resolved {
    expected
        .clone()
        .map(|(v, cpu, acct)| (v, cpu.to_owned(), acct.map(str::to_owned)))
}

#[test]
fn every_fixture_file_is_checked() {
    let mut used = BTreeSet::new();
    used.extend(CPU_MAX.iter().map(|(f, _)| f.to_string()));
    used.extend(
        CFS.iter()
            .flat_map(|(q, p, _)| [q.to_string(), p.to_string()]),
    );
    used.extend(CPU_STAT.iter().map(|(f, _)| f.to_string()));
    used.extend(CPUACCT_USAGE.iter().map(|(f, _)| f.to_string()));
    for (cgroup, mounts, _) in LOCATIONS {
        used.insert(cgroup.to_string());
        used.extend(mounts.map(str::to_owned));
    }
    assert_eq!(
        all_fixtures(),
        used,
        "a fixture file without a check, or a check without a file"
    );
}

#[test]
fn quotas_from_fixtures() {
    for (file, expected) in CPU_MAX {
        assert_eq!(
            parse_cpu_max(&fixture(file)).as_ref(),
            Ok(expected),
            "{file}"
        );
    }
    for (q, p, expected) in CFS {
        assert_eq!(
            parse_cfs_quota(&fixture(q), &fixture(p)).as_ref(),
            Ok(expected),
            "{q}"
        );
    }
    assert_eq!(quota(None, 100_000).cores(), None);
    assert_eq!(quota(Some(15_000), 100_000).cores(), Some(0.15));
    assert_eq!(quota(Some(200_000), 100_000).cores(), Some(2.0));
    assert_eq!(parse_cpu_max("max"), Ok(quota(None, 100_000)));
    assert_eq!(
        parse_cpu_max("  50000 50000 \n"),
        Ok(quota(Some(50_000), 50_000))
    );
}

#[test]
fn stats_from_fixtures() {
    for (file, expected) in CPU_STAT {
        assert_eq!(
            parse_cpu_stat(&fixture(file)).as_ref(),
            Ok(expected),
            "{file}"
        );
    }
    for (file, expected) in CPUACCT_USAGE {
        assert_eq!(
            parse_cpuacct_usage_us(&fixture(file)),
            Ok(*expected),
            "{file}"
        );
    }
    // Without usage_usec, user + system stand in; throttled_usec wins over throttled_time.
    let stat =
        parse_cpu_stat("user_usec 5\nsystem_usec 7\nthrottled_time 9000\nthrottled_usec 3\n");
    assert_eq!(
        stat.map(|s| (s.usage_us, s.throttled_us)),
        Ok((Some(12), Some(3)))
    );
}

#[test]
fn locations_from_fixtures() {
    for (cgroup, mounts, expected) in LOCATIONS {
        let mount_text = mounts.map(fixture);
        let got = resolve(&fixture(cgroup), mount_text.as_deref());
        assert_eq!(got, own(expected), "{cgroup} with {mounts:?}");
    }
}

#[test]
fn location_edge_cases() {
    let v1_mountinfo = fixture("mountinfo_v1.txt");
    // Inside a cgroup namespace the path is `/`: the mount point itself.
    let got = resolve("4:cpu,cpuacct:/\n", Some(&v1_mountinfo));
    assert_eq!(
        got,
        at(
            CgroupVersion::V1,
            "/sys/fs/cgroup/cpu,cpuacct",
            Some("/sys/fs/cgroup/cpu,cpuacct")
        )
    );
    // A path outside the mount's root, or climbing with `..`, also gives the mount point.
    assert_eq!(
        resolve("0::/../../x\n", None),
        at(CgroupVersion::V2, "/sys/fs/cgroup", None)
    );
    let got = resolve("4:cpu,cpuacct:/other/place\n", Some(&v1_mountinfo));
    assert_eq!(
        got,
        at(
            CgroupVersion::V1,
            "/sys/fs/cgroup/cpu,cpuacct",
            Some("/sys/fs/cgroup/cpu,cpuacct")
        )
    );
    // Hybrid without a v1 cpu controller: the unified hierarchy, at its hybrid mount point.
    let got = resolve("1:name=systemd:/user.slice\n0::/user.slice\n", None);
    assert_eq!(
        got,
        at(CgroupVersion::V2, "/sys/fs/cgroup/unified/user.slice", None)
    );
    // A sub-cgroup below the mount's root keeps the rest of its path.
    let got = resolve(
        "4:cpu,cpuacct:/docker/4f1c2a9e7b3d/worker\n",
        Some(&v1_mountinfo),
    );
    assert_eq!(
        got,
        at(
            CgroupVersion::V1,
            "/sys/fs/cgroup/cpu,cpuacct/worker",
            Some("/sys/fs/cgroup/cpu,cpuacct/worker")
        )
    );
    // Mount points with escaped spaces.
    let escaped = "30 24 0:26 / /sys/fs/my\\040cgroup rw - cgroup2 cgroup2 rw\n";
    assert_eq!(
        resolve("0::/a\n", Some(escaped)),
        at(CgroupVersion::V2, "/sys/fs/my cgroup/a", None)
    );
    // v1 cpu listed but no v1 mount: the v2 hierarchy instead.
    let got = resolve("0::/\n3:cpu:/\n", Some(&fixture("mountinfo_v2.txt")));
    assert_eq!(got, at(CgroupVersion::V2, "/sys/fs/cgroup", None));
    // A v1 layout without a cpu controller is no CPU cgroup.
    assert_eq!(resolve("3:memory:/\n", None), Err(CgroupError::NoCpuCgroup));
}

#[test]
fn garbage_is_a_typed_error() {
    for text in [
        "",
        "abc",
        "max max",
        "-1 100000",
        "15000 0",
        "1 2 3",
        "15000 abc",
        "0 100000",
        "+5 100000",
        "99999999999999999999999 100000",
        "max -100000",
    ] {
        assert!(parse_cpu_max(text).is_err(), "cpu.max {text:?}");
    }
    for (q, p) in [
        ("-2", "100000"),
        ("abc", "100000"),
        ("15000", "0"),
        ("15000", ""),
        ("0", "100000"),
        ("", "100000"),
        ("1.5", "100000"),
    ] {
        assert!(parse_cfs_quota(q, p).is_err(), "cfs {q:?} {p:?}");
    }
    for text in [
        "",
        "\n\n",
        "foo 1",
        "nr_periods",
        "nr_periods x",
        "nr_periods 1 2",
        "nr_periods 1\nnr_periods 2",
        "nr_throttled -1",
        "usage_usec 1e6",
    ] {
        assert!(parse_cpu_stat(text).is_err(), "cpu.stat {text:?}");
    }
    for text in ["", "-5", "1.5", "abc", "1 2"] {
        assert!(
            parse_cpuacct_usage_us(text).is_err(),
            "cpuacct.usage {text:?}"
        );
    }
    for text in [
        "",
        "\n\n",
        "garbage",
        "x:cpu:/",
        "1:cpu",
        "1:cpu:relative",
        "-1:cpu:/",
        "1:memory:/a",
    ] {
        assert!(
            cpu_cgroup_dir(text, None).is_err(),
            "/proc/self/cgroup {text:?}"
        );
        assert!(
            cpu_cgroup_dir(text, Some("garbage")).is_err(),
            "/proc/self/cgroup {text:?}"
        );
    }
    // A mount table without cgroup mounts means the hierarchy is not mounted.
    assert_eq!(
        cpu_cgroup_dir("0::/\n", Some("garbage\n- - -\n")),
        Err(CgroupError::NotMounted)
    );
}

#[test]
fn errors_name_the_file_and_stay_short() {
    let long = "x".repeat(10_000);
    let err = parse_cpu_max(&format!("{long} 100000")).unwrap_err();
    let text = err.to_string();
    assert!(text.starts_with("cpu.max: "), "{text}");
    assert!(text.len() < 200, "{text}");
    assert!(
        parse_cpu_stat("nr_periods x")
            .unwrap_err()
            .to_string()
            .contains("cpu.stat")
    );
    assert!(
        cpu_cgroup_dir("junk", None)
            .unwrap_err()
            .to_string()
            .contains("/proc/self/cgroup")
    );
}

/// Text made of the characters these files use, so the parsers get past their first checks.
fn cgroupish() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        "[0-9a-z_:,/ .\\\\\n-]{0,120}",
        "([0-9]{1,3}:[a-z,=]{0,12}:/[a-z/.]{0,12}\n){0,4}"
    ]
}

proptest! {
    #[test]
    fn arbitrary_text_never_panics(a in cgroupish(), b in cgroupish()) {
        let _ = parse_cpu_max(&a);
        let _ = parse_cfs_quota(&a, &b);
        let _ = parse_cpu_stat(&a);
        let _ = parse_cpuacct_usage_us(&a);
        let _ = cpu_cgroup_dir(&a, None);
        let _ = cpu_cgroup_dir(&a, Some(&b));
        if let Ok(q) = parse_cpu_max(&a) {
            prop_assert!(q.period_us > 0);
            prop_assert!(q.cores().is_none_or(|c| c > 0.0));
        }
    }

    #[test]
    fn stat_values_round_trip(periods in any::<u64>(), throttled in any::<u64>(), ns in any::<u64>()) {
        let text = format!("nr_periods {periods}\nnr_throttled {throttled}\nthrottled_time {ns}\nnew_key whatever 1 2\n");
        let stat = parse_cpu_stat(&text).unwrap();
        prop_assert_eq!(stat, CpuStat { nr_periods: periods, nr_throttled: throttled, throttled_us: Some(ns / 1000), usage_us: None });
    }
}
