//! Swarm testing: 200 random short scenarios must pass every checker, and together
//! reach every required coverage fact.

#[test]
fn two_hundred_random_scenarios_pass_and_cover_everything() {
    let result = wizard_sim::swarm::run(1, 200);
    println!("{}", result.render());
    assert!(result.failures.is_empty(), "{}", result.render());
    assert!(
        result.missing().is_empty(),
        "missing coverage: {:?}",
        result.missing()
    );
}
