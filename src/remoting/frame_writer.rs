//! Batching responses for the connection's writer: queued frames gathered into one buffer, with
//! large stored-record bodies written from where they are (`writev`).

use bytes::{Buf, Bytes, BytesMut};
use tokio::io::{AsyncWrite, AsyncWriteExt};

use crate::protocol::frame::encode_head;
use crate::protocol::RemotingCommand;

/// Frames waiting to be written: small pieces are copied into one buffer, large body parts
/// (stored records from the mapped CommitLog) are written from where they are, with `writev`.
#[derive(Default)]
pub(super) struct FrameWriter {
    buf: BytesMut,
    chunks: Vec<Bytes>,
    len: usize,
    frames: usize,
}

/// Body parts at least this big are not copied.
const ZERO_COPY_MIN: usize = 4096;

impl FrameWriter {
    pub(super) fn len(&self) -> usize {
        self.len
    }

    pub(super) fn frames(&self) -> usize {
        self.frames
    }

    pub(super) fn push(&mut self, cmd: RemotingCommand) {
        self.len += 8 + cmd.body_len();
        self.frames += 1;
        encode_head(&cmd, &mut self.buf);
        for part in std::iter::once(&cmd.body).chain(cmd.body_parts.iter()) {
            if part.len() < ZERO_COPY_MIN {
                self.buf.extend_from_slice(part);
            } else {
                if !self.buf.is_empty() {
                    self.chunks.push(self.buf.split().freeze());
                }
                self.chunks.push(part.clone());
            }
        }
    }

    pub(super) async fn write_to<W: AsyncWrite + Unpin>(&mut self, sink: &mut W) -> std::io::Result<()> {
        if !self.buf.is_empty() {
            self.chunks.push(self.buf.split().freeze());
        }
        let mut chunks: std::collections::VecDeque<Bytes> = self.chunks.drain(..).collect();
        while !chunks.is_empty() {
            let slices: Vec<std::io::IoSlice<'_>> = chunks.iter().take(64).map(|c| std::io::IoSlice::new(c)).collect();
            let mut n = sink.write_vectored(&slices).await?;
            if n == 0 {
                return Err(std::io::ErrorKind::WriteZero.into());
            }
            while n > 0 {
                let Some(front) = chunks.front_mut() else { break };
                if n >= front.len() {
                    n -= front.len();
                    chunks.pop_front();
                } else {
                    front.advance(n);
                    n = 0;
                }
            }
        }
        self.len = 0;
        self.frames = 0;
        Ok(())
    }
}
