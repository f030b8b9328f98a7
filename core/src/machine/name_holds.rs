//! Profile names held by the shared store's claims (PROTOCOL.md 7.1, profiles across
//! shards): what the last answer about each name key said, so that `create_profile`
//! is refused for a name another shard's creation holds (`not_allowed`, the name is
//! taken) or one the store could not check (`busy`).
//!
//! A shard's shell claims a name's keys in the store every shard shares before the core
//! sees `create_profile`, and hands the answer over first
//! ([`crate::vocabulary::profile::NameClaim`]). Each answer replaces what the previous
//! one said of the same keys: `Claimed` frees them, `HeldElsewhere` and `Unanswered`
//! hold them. A shell without a shared store sends no answer and nothing is held. At
//! most [`NAME_HOLDS_MAX`] keys are held; past it the smallest key is forgotten (only a
//! name asked again meanwhile could need it, and its answer came later).

use std::collections::BTreeMap;

use crate::vocabulary::names;
use crate::vocabulary::profile::{ClaimAnswer, NameClaim};

/// Name keys held at most.
pub const NAME_HOLDS_MAX: usize = 1024;

/// Why a name may not be taken now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hold {
    /// Another shard's creation holds it: the name is taken.
    Elsewhere,
    /// The shared store did not answer: nothing is known about it.
    Unchecked,
}

/// The held name keys and why.
#[derive(Clone, Debug, Default)]
pub struct NameHolds {
    held: BTreeMap<String, Hold>,
}

impl NameHolds {
    /// Takes the store's answer about a name's keys.
    pub fn learn(&mut self, claim: &NameClaim) {
        let hold = match claim.answer {
            ClaimAnswer::Claimed => None,
            ClaimAnswer::HeldElsewhere => Some(Hold::Elsewhere),
            ClaimAnswer::Unanswered => Some(Hold::Unchecked),
        };
        for key in &claim.keys {
            match hold {
                None => {
                    self.held.remove(key);
                }
                Some(h) => {
                    if !self.held.contains_key(key) && self.held.len() >= NAME_HOLDS_MAX {
                        self.held.pop_first();
                    }
                    self.held.insert(key.clone(), h);
                }
            }
        }
    }

    /// Why `name` (already cleaned) may not be taken now, if it may not: `Elsewhere`
    /// before `Unchecked` when its keys say both.
    pub fn hold(&self, name: &str) -> Option<Hold> {
        let keys = names::keys(name);
        let holds: Vec<Hold> = keys
            .iter()
            .filter_map(|k| self.held.get(k))
            .copied()
            .collect();
        if holds.contains(&Hold::Elsewhere) {
            Some(Hold::Elsewhere)
        } else {
            holds.first().copied()
        }
    }

    /// The keys held now.
    pub fn len(&self) -> usize {
        self.held.len()
    }

    /// Whether no key is held.
    pub fn is_empty(&self) -> bool {
        self.held.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claim(name: &str, answer: ClaimAnswer) -> NameClaim {
        NameClaim {
            keys: names::keys(name).into(),
            answer,
        }
    }

    #[test]
    fn a_name_held_elsewhere_holds_its_look_alikes_until_claimed_here() {
        let mut holds = NameHolds::default();
        assert_eq!(holds.hold("Morgana"), None);
        holds.learn(&claim("Morgana", ClaimAnswer::HeldElsewhere));
        for alike in ["Morgana", "MORGANA", "Morg\u{0430}na"] {
            assert_eq!(holds.hold(alike), Some(Hold::Elsewhere), "{alike:?}");
        }
        assert_eq!(holds.hold("Merlin"), None);
        holds.learn(&claim("Morgana", ClaimAnswer::Claimed));
        assert_eq!(holds.hold("Morgana"), None);
        assert!(holds.is_empty());
    }

    #[test]
    fn an_unanswered_claim_holds_the_name_as_unchecked() {
        let mut holds = NameHolds::default();
        holds.learn(&claim("Merlin", ClaimAnswer::Unanswered));
        assert_eq!(holds.hold("merlin"), Some(Hold::Unchecked));
        holds.learn(&claim("Merlin", ClaimAnswer::HeldElsewhere));
        assert_eq!(holds.hold("Merlin"), Some(Hold::Elsewhere));
    }

    #[test]
    fn at_most_the_bound_of_keys_is_held() {
        let mut holds = NameHolds::default();
        for i in 0..NAME_HOLDS_MAX + 10 {
            holds.learn(&NameClaim {
                keys: vec![format!("k{i:05}")],
                answer: ClaimAnswer::HeldElsewhere,
            });
        }
        assert_eq!(holds.len(), NAME_HOLDS_MAX);
    }
}
