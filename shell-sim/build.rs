//! Build script: records the commit the simulator is built from (`WIZARD_SIM_COMMIT`),
//! so that a failure's repro line names seed and commit.

fn main() {
    wizard_build_commit::emit("WIZARD_SIM_COMMIT", false);
}
