//! Build script: the commit the server is built from (`WIZARD_COMMIT`), for
//! `wizard_build_info` and `--version`. A build outside a git checkout (an image built
//! from a copied tree) takes `WIZARD_COMMIT` from its environment, or says `unknown`.

fn main() {
    wizard_build_commit::emit("WIZARD_COMMIT", true);
}
