//! What the world's actors share while they act: the event queue, the network, the
//! report, and the lobby codes hosts pass to their friends out of band.

use crate::model::net::{Ev, Net};
use crate::model::queue::EventQueue;
use crate::runs::report::Report;

/// A table's shared facts.
#[derive(Clone, Debug, Default)]
pub struct TableInfo {
    /// The lobby code once the host has it.
    pub code: Option<String>,
    /// The joiners' client indices.
    pub members: Vec<usize>,
}

/// The borrowed world an actor acts on.
#[derive(Debug)]
pub struct Ctx<'a> {
    pub q: &'a mut EventQueue<Ev>,
    pub net: &'a mut Net,
    pub report: &'a mut Report,
    pub tables: &'a mut Vec<TableInfo>,
}
