//! Wire encoding of cards, suits and actions.
