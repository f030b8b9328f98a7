//! A rating figure as messages and records carry it.

use serde::{Deserialize, Serialize};

/// A rating figure in a message or a record: an `f64` equal to another only with the
/// same bits, so that the types that carry one can be compared whole (`Eq`).
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Figure(pub f64);

impl PartialEq for Figure {
    fn eq(&self, other: &Figure) -> bool {
        self.0.to_bits() == other.0.to_bits()
    }
}

impl Eq for Figure {}
