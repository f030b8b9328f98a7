//! The writer side of the simulated shell ([`Host`]): outputs routed into the
//! connections' outboxes, writers sending what the peer's window allows, closes after
//! the queued frames, and a reader too slow for its outbox being dropped.
//!
//! As in shell-smol, a pass's frames go to the socket at the end of the
//! pass that routed them, as far as the window allows (there the core task writes them
//! itself, with one write per connection); only what does not fit waits for the window
//! to open (there the connection's writer finishes it).

use wizard_core::Time;
use wizard_core::shell::reply_wait::ReplyWait;
use wizard_core::vocabulary::io::{ConnId, Delivery, Input, Note, Output, Router};
use wizard_core::vocabulary::wire::CloseCode;

use crate::host::core_task::Host;
use crate::host::outbox::{Outbox, Queued, carries_events};
use crate::model::conn_map::ConnMap;
use crate::model::net::{Arrive, Ev, Net};
use crate::model::queue::EventQueue;

/// Routed outputs into the outboxes, at `at` (when the batch's CPU time is spent).
struct Outboxes<'a> {
    outboxes: &'a mut ConnMap<Outbox>,
    /// The embedded AI service's in-process link, if it is open.
    in_process: Option<ConnId>,
    /// Requests and closes for the in-process link, carried out after the routing.
    in_process_out: Vec<Ev>,
    /// When the core needs the answers of the link's requests.
    replies: &'a mut ReplyWait,
    /// The connections whose writers have something new.
    touched: Vec<ConnId>,
    at: Time,
    /// `Newest` frames replaced in a queue, and frames with events marked `Newest`.
    replaced: u64,
    misdelivered: Vec<(Time, String)>,
}

impl Outboxes<'_> {
    fn get(&mut self, conn: ConnId) -> Option<&mut Outbox> {
        let o = self.outboxes.get_mut(&conn)?;
        o.ready_at = o.ready_at.max(self.at);
        self.touched.push(conn);
        Some(o)
    }
}

impl Router for Outboxes<'_> {
    fn send(&mut self, conn: ConnId, text: String, delivery: Delivery) {
        if delivery == Delivery::Newest && carries_events(&text) {
            self.misdelivered.push((
                self.at,
                format!(
                    "conn {conn}: a frame with events marked replaceable (`Newest`): a slow \
                     reader's queue may drop its events"
                ),
            ));
        }
        if let Some(o) = self.get(conn)
            && o.push(text, delivery) == Queued::Replaced
        {
            self.replaced += 1;
        }
    }

    fn ai_request(
        &mut self,
        conn: ConnId,
        request: Box<wizard_core::vocabulary::wire::AiRequest>,
        needed_at: Time,
    ) {
        if self.in_process == Some(conn) {
            self.replies.asked(request.request_id(), needed_at);
            self.in_process_out.push(Ev::AiInProcess { conn, request });
        } else {
            self.send(
                conn,
                wizard_core::vocabulary::wire::encode_ai_request(&request),
                Delivery::Every,
            );
        }
    }

    fn close(&mut self, conn: ConnId, code: CloseCode) {
        if let Some(o) = self.get(conn) {
            o.close(code);
        } else if self.in_process == Some(conn) {
            // No socket: the link is gone at once, for the core and for the service.
            self.replies.clear();
            self.in_process_out.push(Ev::ServerArrive {
                conn,
                what: Arrive::Close,
            });
            self.in_process_out.push(Ev::ClientClosed {
                conn,
                code: Some(code),
            });
        }
    }

    fn note(&mut self, _note: Note) {}
}

impl Host {
    /// Routes outputs into the outboxes and lets writers send what fits.
    pub(crate) fn route(
        &mut self,
        q: &mut EventQueue<Ev>,
        net: &Net,
        at: Time,
        routed: Vec<Output>,
    ) {
        let mut into = Outboxes {
            outboxes: &mut self.outboxes,
            in_process: self.in_process,
            in_process_out: Vec::new(),
            replies: &mut self.replies,
            touched: Vec::new(),
            at,
            replaced: 0,
            misdelivered: Vec::new(),
        };
        for output in routed {
            output.route(&mut into);
        }
        self.states_replaced += into.replaced;
        self.door_violations.append(&mut into.misdelivered);
        for ev in into.in_process_out {
            q.push(at, ev);
        }
        let mut touched = into.touched;
        touched.dedup();
        for conn in touched {
            self.pump(q, net, at, conn);
        }
    }

    /// The writer of `conn`: sends what the window allows, then a close if asked.
    pub fn pump(&mut self, q: &mut EventQueue<Ev>, net: &Net, at: Time, conn: ConnId) {
        let Some(o) = self.outboxes.get_mut(&conn) else {
            return;
        };
        let lat = net.latency_us(conn);
        // A window opening early must not send frames before they were routed.
        let at = at.max(o.ready_at);
        if o.overflowed() {
            // The writer gives up on a reader this slow: the connection is dropped.
            self.outboxes.remove(&conn);
            self.overflows += 1;
            q.push(at.plus_us(lat), Ev::ClientClosed { conn, code: None });
            self.enqueue(Input::Closed { conn });
            self.wake(q, at);
            return;
        }
        let frames = o.take_writable();
        if !frames.is_empty() {
            q.push(at.plus_us(lat), Ev::Deliver { conn, frames });
        }
        // A write is blocked from when frames first wait behind a full window until
        // the queue is empty: the shell's writer hands the socket a whole batch, and a
        // batch that drains only partly within `WRITE_TIMEOUT` is a timeout.
        let newly_blocked = match (o.is_empty(), o.blocked_since) {
            (true, _) => {
                o.blocked_since = None;
                false
            }
            (false, Some(_)) => false,
            (false, None) => {
                o.blocked_since = Some(at);
                true
            }
        };
        if newly_blocked {
            self.write_blocked(q, at, conn);
        }
        let Some(o) = self.outboxes.get_mut(&conn) else {
            return;
        };
        if let Some(code) = o.take_close() {
            q.push(
                at.plus_us(lat),
                Ev::ClientClosed {
                    conn,
                    code: Some(code),
                },
            );
            // The peer answers the close frame; then the reader reports the end.
            q.push(
                at.plus_us(2 * lat),
                Ev::ServerArrive {
                    conn,
                    what: Arrive::Close,
                },
            );
        }
    }

    /// The peer read `bytes`: the window opens again.
    pub fn consumed(
        &mut self,
        q: &mut EventQueue<Ev>,
        net: &Net,
        now: Time,
        conn: ConnId,
        bytes: usize,
    ) {
        if let Some(o) = self.outboxes.get_mut(&conn) {
            o.consumed(bytes);
            if !o.is_empty() || o.close_pending() {
                self.pump(q, net, now, conn);
            }
        }
    }
}
