//! A quick-play player's part of the client machine ([`Client`], role
//! [`Role::Quick`](crate::actors::client::Role)): `quick_play` for a table of its size,
//! `queued`, then seated by the server (the lobby's `state`) and playing like any
//! player; or, while queued, `cancel_quick_play` and queue again later, or walking away
//! (the connection closed for good). A refusal (`busy`) is retried with the player's
//! policy like any new work. The server's side of it is judged by `checks/quick.rs`.

use wizard_core::Time;
use wizard_core::vocabulary::wire::ClientMessage;

use crate::actors::client::{Client, Request};
use crate::actors::ctx::Ctx;

/// What a queued player does if it is not seated first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Leave {
    /// `cancel_quick_play`, then queue again after the plan's `requeue_us`.
    Cancel,
    /// Closes its connection and never comes back.
    WalkAway,
}

/// A quick-play player's plan, drawn when the scenario builds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QuickPlan {
    /// The table size asked for, 3 to 6.
    pub seats: u8,
    /// What it does after waiting how long in the pool (once).
    pub leave: Option<(Leave, u64)>,
    /// After a cancel, how long until it queues again.
    pub requeue_us: u64,
    /// When the current ticket was confirmed (`queued`).
    pub queued_at: Option<Time>,
}

impl Client {
    /// Does what is due for a quick-play player not yet seated.
    pub(crate) fn step_quick(&mut self, cx: &mut Ctx<'_>, now: Time) {
        if self.done || self.lobby.is_some() {
            return;
        }
        let Some(mut plan) = self.quick else {
            return;
        };
        match (self.inflight, plan.queued_at) {
            (None, _) if self.may_retry(now) => {
                // Open-loop: the first attempt counts from the player's arrival.
                let intended = if self.attempts == 0 { self.born } else { now };
                self.inflight = Some(Request {
                    kind: "quick_play",
                    intended,
                });
                plan.queued_at = None;
                let m = ClientMessage::QuickPlay {
                    name: format!("q{}", self.id),
                    seats: Some(plan.seats),
                };
                self.send(cx, now, &m);
            }
            (Some(_), Some(queued)) => match plan.leave {
                Some((Leave::Cancel, after)) if now.since_us(queued) >= after => {
                    plan.leave = None;
                    plan.queued_at = None;
                    self.inflight = None;
                    self.send(cx, now, &ClientMessage::CancelQuickPlay);
                    self.retry_at = now.plus_us(plan.requeue_us);
                    self.timer(cx, self.retry_at);
                }
                Some((Leave::WalkAway, after)) if now.since_us(queued) >= after => {
                    self.done = true;
                    self.leave(cx, now);
                }
                _ => {}
            },
            _ => {}
        }
        self.quick = Some(plan);
    }

    /// `queued`: the ticket is in the pool; the plan's cancel or walk-away falls due
    /// after its wait.
    pub(crate) fn on_queued(&mut self, cx: &mut Ctx<'_>, now: Time) {
        let Some(plan) = self.quick.as_mut() else {
            return;
        };
        if self.inflight.is_none() || plan.queued_at.is_some() {
            return;
        }
        plan.queued_at = Some(now);
        if let Some((_, after)) = plan.leave {
            self.timer(cx, now.plus_us(after));
        }
    }
}
