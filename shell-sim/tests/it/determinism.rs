//! Same seed, same trace: every scenario in fixtures/scenarios runs whole, twice with
//! one seed, and must give the same trace hash and timeline; another seed gives another
//! trace.

use std::path::PathBuf;

use crate::common::{run, scenario};

fn scenario_names() -> Vec<String> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fixtures/scenarios");
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| {
            let name = e.ok()?.file_name().into_string().ok()?;
            Some(name.strip_suffix(".json")?.to_string())
        })
        .collect();
    names.sort();
    names
}

#[test]
fn same_seed_same_trace_hash() {
    let names = scenario_names();
    assert!(names.len() >= 9, "scenarios missing: {names:?}");
    for name in &names {
        let s = scenario(name);
        let a = run(s.clone(), 11);
        let b = run(s.clone(), 11);
        assert_eq!(
            a.trace_hash, b.trace_hash,
            "{name}: same seed, different traces"
        );
        assert_eq!(
            a.timeline, b.timeline,
            "{name}: same seed, different timelines"
        );
        assert_eq!(a.violations, b.violations);
        let c = run(s, 12);
        assert_ne!(
            a.trace_hash, c.trace_hash,
            "{name}: the seed changes nothing"
        );
    }
}
