//! Telemetry, the bidirectional stream every client opens first (Java's `ClientActivity`): the
//! client's Settings are answered at once, merged ([`super::settings::merged`]); a command
//! before any Settings is answered UNRECOGNIZED_CLIENT_TYPE (Java throws); Settings without
//! publishing or subscription end the stream with INVALID_ARGUMENT (a gRPC error, as Java).
//! With `aclEnable`, the headers that open the stream are authenticated (`auth.rs`: refused,
//! the only answer is UNAUTHORIZED) and each Settings needs its topics' and group's permissions
//! (FORBIDDEN in the answer, the stream stays open).
//! The stream also carries the server's commands to the client (`recover.rs`); it is the
//! client's session in the broker's client tables (each stream one session, by its id).
//! The stream ends when the client closes it or the broker shuts down; the client's settings
//! and its auto-renewed messages (`renew.rs`) go with it.
//!
//! May import: `grpc`, `acl` (the stream's [`Authority`]).

use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use futures_util::Stream;
use tokio::sync::mpsc;
use tonic::Streaming;
use tracing::debug;

use super::auth::Guarded;
use super::pb::{settings::PubSub, telemetry_command::Command, Code, Settings, TelemetryCommand};
use super::pending::Answer;
use super::status::{self, Refused};
use super::{validate, Grpc};
use crate::acl::authority::Authority;

/// A server stream of `T`s.
pub type Outbound<T> = Pin<Box<dyn Stream<Item = Result<T, tonic::Status>> + Send>>;

/// Commands queued for one client before the stream pushes back.
const OUTBOUND_QUEUE: usize = 16;

pub fn open(
    g: Arc<Grpc>,
    client_id: String,
    who: Authority,
    mut inbound: Streaming<TelemetryCommand>,
) -> Outbound<TelemetryCommand> {
    let (tx, rx) = mpsc::channel::<Result<TelemetryCommand, tonic::Status>>(OUTBOUND_QUEUE);
    let stream_id = g.streams.fetch_add(1, Ordering::Relaxed);
    let shutdown = g.shutdown.clone();
    let stop = g.shutdown.clone();
    tokio::spawn(async move {
        loop {
            let next = tokio::select! {
                _ = shutdown.cancelled() => break,
                _ = tx.closed() => break,
                n = inbound.message() => n,
            };
            let cmd = match next {
                Ok(Some(cmd)) => cmd,
                Ok(None) => break,
                Err(e) => {
                    debug!(client_id, error = %e, "telemetry stream failed");
                    break;
                }
            };
            let known = || g.clients.knows(&client_id);
            let answer = match cmd.command {
                Some(Command::Settings(s)) => settings(&g, &client_id, &who, s, stream_id, &tx),
                // Answers to the server's commands, under their nonce (`pending.rs`), from a client
                // that sent its Settings.
                Some(Command::ThreadStackTrace(t)) if known() => {
                    g.pending.answer(stream_id, &t.nonce, Answer::Stack(t.thread_stack_trace.unwrap_or_default()));
                    continue;
                }
                Some(Command::VerifyMessageResult(v)) if known() => {
                    let code = cmd.status.as_ref().map_or(Code::Unspecified as i32, |s| s.code);
                    g.pending.answer(stream_id, &v.nonce, Answer::Verified(code));
                    continue;
                }
                // Results of server commands (a RecoverOrphanedTransactionCommand is answered by
                // EndTransaction, not here) and anything else.
                _ if known() => continue,
                _ => Ok(with_status(Refused::new(
                    Code::UnrecognizedClientType,
                    "cannot find client settings for this client",
                ))),
            };
            let end = answer.is_err();
            if tx.send(answer).await.is_err() || end {
                break;
            }
        }
        g.clients.remove(&client_id, Some(stream_id));
        // This session leaves the broker's client tables (a newer stream is another session);
        // they held the stream's sender, which must go for the stream to end.
        g.broker.client_gone(stream_id).await;
        if !g.clients.knows(&client_id) {
            // Gone (no newer stream): its messages are no longer renewed.
            g.renewals.drop_client(&client_id).await;
        }
    });
    Box::pin(futures_util::stream::unfold((rx, stop), |(mut rx, stop)| async move {
        let item = tokio::select! {
            _ = stop.cancelled() => None,
            i = rx.recv() => i,
        };
        item.map(|i| (i, (rx, stop)))
    }))
}

fn with_status(r: Refused) -> TelemetryCommand {
    TelemetryCommand { status: Some(r.status()), command: None }
}

/// `processAndWriteClientSettings`.
fn settings(
    g: &Grpc,
    client_id: &str,
    who: &Authority,
    s: Settings,
    stream: u64,
    commands: &super::settings::Commands,
) -> Result<TelemetryCommand, tonic::Status> {
    // The ACL first, as Java's pipeline: a refusal is answered, the stream stays open.
    if let Err(r) = s.check(who) {
        return Ok(with_status(r));
    }
    let refused = |r: Refused| tonic::Status::invalid_argument(r.why);
    match &s.pub_sub {
        Some(PubSub::Publishing(p)) => {
            if p.topics.len() > super::settings::MAX_PUBLISHING_TOPICS {
                return Err(tonic::Status::invalid_argument("too many topics in the publishing settings"));
            }
            for t in &p.topics {
                validate::topic(&g.core.config, Some(t)).map_err(refused)?;
            }
        }
        Some(PubSub::Subscription(sub)) => {
            validate::group(sub.group.as_ref()).map_err(refused)?;
            if sub.subscriptions.len() > super::settings::MAX_PUBLISHING_TOPICS {
                return Err(tonic::Status::invalid_argument("too many subscriptions in the settings"));
            }
        }
        None => return Err(tonic::Status::invalid_argument("there is no publishing or subscription data in settings")),
    }
    let merged = super::settings::merged(&g.core, &s);
    if let Err(r) = g.clients.put(client_id, s, stream, commands.clone()) {
        return Ok(with_status(r));
    }
    Ok(TelemetryCommand { status: Some(status::ok()), command: Some(Command::Settings(merged)) })
}
