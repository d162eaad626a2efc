//! RecoverOrphanedTransactionCommand (Java's `GrpcClientChannel.processCheckTransaction`): the
//! broker's transaction check service asks a gRPC producer about a half message whose
//! transaction was neither committed nor rolled back in time. The command goes on the Telemetry
//! stream of one producer that publishes to the group's topic (a gRPC producer's group is its
//! topic), in turn; it carries the message as its producer sent it and a transaction id naming
//! the copy of the half message the check service just stored, which the SDK's EndTransaction
//! (source SERVER_CHECK) then ends.
//!
//! A stream whose queue is full is passed over (the next check asks again): the check service
//! never waits for a client.
//!
//! May import: `grpc`, `store` (the record codec).

use std::sync::atomic::{AtomicUsize, Ordering};

use tracing::debug;

use super::pb::{telemetry_command::Command, RecoverOrphanedTransactionCommand, TelemetryCommand};
use super::{convert, txn, Grpc};
use crate::store::commit_log::record;

/// Where the next command starts among a topic's producers.
static NEXT: AtomicUsize = AtomicUsize::new(0);

impl Grpc {
    /// Asks one producer of `group` about the half message `sent` (the record of the message as
    /// sent: real topic and queue) stored at `commit_log_offset` / `queue_offset` of the half
    /// queue. False if no producer of the group is connected, or none can take the command now.
    pub fn recover_orphaned(&self, group: &str, sent: &[u8], commit_log_offset: i64, queue_offset: i64) -> bool {
        let producers = self.clients.publishers_of(group);
        if producers.is_empty() {
            return false;
        }
        let Some(topic) = record::decode(sent, false).map(|m| m.topic) else { return false };
        let Some(mut message) = convert::message(sent, &topic, String::new(), 0) else { return false };
        // A message of the check carries no receipt: it is not being consumed.
        if let Some(sys) = message.system_properties.as_mut() {
            sys.receipt_handle = None;
            sys.invisible_duration = None;
        }
        let command = TelemetryCommand {
            status: None,
            command: Some(Command::RecoverOrphanedTransactionCommand(RecoverOrphanedTransactionCommand {
                message: Some(message),
                transaction_id: txn::transaction_id(commit_log_offset, queue_offset),
            })),
        };
        let start = NEXT.fetch_add(1, Ordering::Relaxed);
        for i in 0..producers.len() {
            let (client_id, commands) = &producers[(start + i) % producers.len()];
            match commands.try_send(Ok(command.clone())) {
                Ok(()) => {
                    debug!(group, client_id, queue_offset, "asked a gRPC producer about a transaction");
                    return true;
                }
                Err(e) => debug!(group, client_id, error = %e, "a gRPC producer cannot take a transaction check now"),
            }
        }
        false
    }
}
