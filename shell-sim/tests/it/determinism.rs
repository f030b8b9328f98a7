//! Same seed, same trace: every scenario (shortened) runs twice with one seed and must
//! give the same trace hash; another seed gives another.

use crate::common::{run, scenario};

#[test]
fn same_seed_same_trace_hash() {
    for name in [
        "seed_overload",
        "limits",
        "attack",
        "ai_faults",
        "ai_overloaded",
        "stalls",
        "oscillation",
        "metastability",
    ] {
        let mut s = scenario(name);
        s.duration_s = s.duration_s.min(6.0);
        s.liveness_s = s.liveness_s.min(4.0);
        for t in &mut s.tables {
            t.count = t.count.min(60);
        }
        let a = run(s.clone(), 11);
        let b = run(s.clone(), 11);
        assert_eq!(
            a.trace_hash, b.trace_hash,
            "{name}: same seed, different traces"
        );
        assert_eq!(a.timeline.len(), b.timeline.len());
        let c = run(s, 12);
        assert_ne!(
            a.trace_hash, c.trace_hash,
            "{name}: the seed changes nothing"
        );
    }
}
