//! Overload control sub-machines and the pure parsers the load probe needs.
//!
//! Each sub-machine is a plain struct that takes `now` and returns a decision; only the
//! server turns decisions into outputs.
