//! The broker's way to one gRPC client ([`CommandSink`], the sending half of its Telemetry
//! stream), which the broker's client tables hold: RecoverOrphanedTransactionCommand (Java's
//! `GrpcClientChannel.processCheckTransaction`), when the transaction check service asks a
//! producer about a half message whose transaction was neither committed nor rolled back in
//! time. It carries the message as its producer sent it and a transaction id naming the copy of
//! the half message the check service just stored, which the SDK's EndTransaction (source
//! SERVER_CHECK) then ends.
//!
//! A stream whose queue is full is passed over (the next check asks again): the check service
//! never waits for a client.
//!
//! May import: `grpc`, `core` (the trait), `store` (the record codec).

use tracing::debug;

use super::pb::{telemetry_command::Command, RecoverOrphanedTransactionCommand, TelemetryCommand};
use super::settings::Commands;
use super::{convert, txn};
use crate::core::door::DoorClient;
use crate::store::commit_log::record;

/// The Telemetry stream of one client session.
pub struct CommandSink(pub Commands);

impl DoorClient for CommandSink {
    fn check_transaction(&self, sent: &[u8], commit_log_offset: i64, queue_offset: i64) -> bool {
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
        match self.0.try_send(Ok(command)) {
            Ok(()) => true,
            Err(e) => {
                debug!(queue_offset, error = %e, "a gRPC producer cannot take a transaction check now");
                false
            }
        }
    }
}
