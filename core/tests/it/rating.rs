//! The Weng-Lin Bradley-Terry full update against vectors computed independently
//! (`fixtures/ratings/reference.py`, checked there against openskill's BradleyTerryFull).

use serde::Deserialize;
use wizard_core::machine::rating::{self, Rating};

#[derive(Deserialize)]
struct Vector {
    before: Vec<(f64, f64)>,
    scores: Vec<i64>,
    after: Vec<(f64, f64)>,
}

fn vectors() -> Vec<Vector> {
    let text = include_str!("../../../fixtures/ratings/vectors.json");
    serde_json::from_str(text).unwrap()
}

#[test]
fn update_matches_the_reference_vectors() {
    let vectors = vectors();
    assert!(vectors.len() >= 30);
    for v in vectors {
        let before: Vec<Rating> = v
            .before
            .iter()
            .map(|&(mu, sigma)| Rating { mu, sigma })
            .collect();
        let after = rating::rate(&before, &v.scores);
        assert_eq!(after.len(), v.after.len());
        for (got, &(mu, sigma)) in after.iter().zip(&v.after) {
            assert!(
                (got.mu - mu).abs() < 1e-9 && (got.sigma - sigma).abs() < 1e-9,
                "{got:?} against ({mu}, {sigma}) for {:?} {:?}",
                v.before,
                v.scores
            );
        }
    }
}

#[test]
fn winner_gains_loser_loses_and_ties_are_symmetric() {
    let after = rating::rate(&[Rating::NEW; 3], &[50, 50, -10]);
    assert_eq!(after[0], after[1]);
    assert!(after[0].mu > rating::MU0 && after[2].mu < rating::MU0);
    assert!(after.iter().all(|r| r.sigma < rating::SIGMA0));
}

#[test]
fn shown_rating_is_the_rounded_ordinal() {
    assert_eq!(Rating::NEW.shown(), 0.0);
    assert_eq!(
        Rating {
            mu: 30.0,
            sigma: 2.0 / 3.0
        }
        .shown(),
        28.0
    );
    assert_eq!(
        Rating {
            mu: 27.123_456,
            sigma: 1.0
        }
        .shown(),
        24.12
    );
}
