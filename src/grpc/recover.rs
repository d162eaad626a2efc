//! The broker's way to one gRPC client ([`CommandSink`], the sending half of its Telemetry
//! stream), which the broker's client tables hold (Java's `GrpcClientChannel`):
//! - RecoverOrphanedTransactionCommand, when the transaction check service asks a producer about
//!   a half message whose transaction was neither committed nor rolled back in time. It carries
//!   the message as its producer sent it and a transaction id naming the copy of the half
//!   message the check service just stored, which the SDK's EndTransaction (source
//!   SERVER_CHECK) then ends. A stream whose queue is full is passed over (the next check asks
//!   again): the check service never waits for a client.
//! - PrintThreadStackTraceCommand (mqadmin `consumerStatus` with jstack) and VerifyMessageCommand
//!   (CONSUME_MESSAGE_DIRECTLY), answered on the stream under their nonce (`pending.rs`).
//!
//! May import: `grpc`, `core` (the trait), `store` (the record codec).

use std::sync::Arc;
use std::time::Duration;

use tracing::debug;

use super::pb::{
    telemetry_command::Command, Code, PrintThreadStackTraceCommand, RecoverOrphanedTransactionCommand,
    TelemetryCommand, VerifyMessageCommand,
};
use super::pending::{Answer, Pending};
use super::settings::Commands;
use super::{convert, txn};
use crate::core::door::{DoorClient, DoorFuture, Verified};
use crate::store::commit_log::record;

/// The Telemetry stream of one client session.
pub struct CommandSink {
    pub commands: Commands,
    /// The stream's id: answers count only on it.
    pub stream: u64,
    pub pending: Arc<Pending>,
}

impl CommandSink {
    /// Sends the command `make(nonce)` and waits up to `timeout` for its answer.
    async fn ask(&self, make: impl FnOnce(String) -> Command, timeout: Duration) -> Option<Answer> {
        let (nonce, answer) = self.pending.open(self.stream)?;
        let command = TelemetryCommand { status: None, command: Some(make(nonce.clone())) };
        let answered = match self.commands.try_send(Ok(command)) {
            Ok(()) => tokio::time::timeout(timeout, answer).await.ok().and_then(Result::ok),
            Err(e) => {
                debug!(error = %e, "a gRPC client cannot take a command now");
                None
            }
        };
        if answered.is_none() {
            self.pending.forget(self.stream, &nonce);
        }
        answered
    }

    /// The v2 message of a stored record, as a command carries it (no receipt).
    fn message(sent: &[u8]) -> Option<super::pb::Message> {
        let topic = record::decode(sent, false)?.topic;
        let mut message = convert::message(sent, &topic, String::new(), 0)?;
        if let Some(sys) = message.system_properties.as_mut() {
            sys.receipt_handle = None;
            sys.invisible_duration = None;
        }
        Some(message)
    }
}

impl DoorClient for CommandSink {
    fn check_transaction(&self, sent: &[u8], commit_log_offset: i64, queue_offset: i64) -> bool {
        let Some(message) = Self::message(sent) else { return false };
        let command = TelemetryCommand {
            status: None,
            command: Some(Command::RecoverOrphanedTransactionCommand(RecoverOrphanedTransactionCommand {
                message: Some(message),
                transaction_id: txn::transaction_id(commit_log_offset, queue_offset),
            })),
        };
        match self.commands.try_send(Ok(command)) {
            Ok(()) => true,
            Err(e) => {
                debug!(queue_offset, error = %e, "a gRPC producer cannot take a transaction check now");
                false
            }
        }
    }

    fn thread_stack_trace(&self, timeout: Duration) -> DoorFuture<'_, Option<String>> {
        Box::pin(async move {
            let make = |nonce| Command::PrintThreadStackTraceCommand(PrintThreadStackTraceCommand { nonce });
            match self.ask(make, timeout).await? {
                Answer::Stack(s) => Some(s),
                Answer::Verified(_) => None,
            }
        })
    }

    fn verify_message(&self, record: Vec<u8>, timeout: Duration) -> DoorFuture<'_, Option<Verified>> {
        Box::pin(async move {
            let message = Self::message(&record)?;
            let make = |nonce| Command::VerifyMessageCommand(VerifyMessageCommand { nonce, message: Some(message) });
            let Answer::Verified(code) = self.ask(make, timeout).await? else { return None };
            Some(match Code::try_from(code) {
                Ok(Code::Ok) => Verified::Consumed,
                Ok(Code::FailedToConsumeMessage) => Verified::Later,
                Ok(Code::MessageCorrupted) => Verified::Corrupted,
                _ => Verified::Other,
            })
        })
    }
}
