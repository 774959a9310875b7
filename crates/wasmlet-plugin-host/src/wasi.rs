//! The WASI a plugin sees. A Rust `wasm32-wasip2` guest imports `wasi:cli`, `wasi:io`,
//! `wasi:filesystem` and friends from its standard library even when it uses none of them, so
//! the host links real WASI with a deny-all context rather than building plugins without it:
//! plugin authors keep `std` (`println!`, `std::fs`), and a grant in the plugin config is all
//! it takes to open a directory. By default a plugin has no preopened directory, no
//! environment, no arguments, a closed stdin and no network (TCP, UDP and name lookup are
//! off); clocks and random numbers are harmless and stay. Its stdout and stderr go to the
//! host's log, line by line, under the plugin's name, within the same per-call budget as the
//! `host.log` import. [`imports`] tells an author which of the component's WASI imports
//! depend on grants and what they get.

pub(crate) mod imports;

use super::config::Capabilities;
use super::state::{LogBudget, MAX_LOG_BYTES};
use bytes::Bytes;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::p2::{OutputStream, Pollable, StreamResult};
use wasmtime_wasi::{FsPerms, WasiCtx, WasiCtxBuilder};

/// A granted directory that could not be opened, so the plugin cannot be given its
/// capabilities (`Fault::Grant`).
#[derive(Debug, thiserror::Error)]
#[error("cannot open granted directory {}: {source:#}", .path.display())]
pub struct GrantError {
    /// The directory on the host.
    pub path: std::path::PathBuf,
    /// Why WASI could not open it.
    #[source]
    pub source: wasmtime::Error,
}

/// Builds a plugin's WASI context: deny-all plus what `grants` names. Fails when a granted
/// directory cannot be opened, naming it.
pub fn context(
    plugin: &Arc<str>,
    grants: &Capabilities,
    log_budget: &LogBudget,
) -> Result<WasiCtx, GrantError> {
    let mut builder = WasiCtxBuilder::new();
    builder
        // File operations go to the call runtime's blocking pool, never the calling thread:
        // a read blocked there (a FIFO in a granted directory) must not keep the call's
        // deadline timer from firing (`super::engine`).
        .allow_blocking_current_thread(false)
        .allow_tcp(false)
        .allow_udp(false)
        .allow_ip_name_lookup(false)
        .stdout(LogOutput::new(plugin, "stdout", log_budget))
        .stderr(LogOutput::new(plugin, "stderr", log_budget));
    for (name, value) in &grants.environment {
        builder.env(name, value);
    }
    for grant in &grants.directories {
        let perms = if grant.writable {
            FsPerms::ReadWrite
        } else {
            FsPerms::ReadOnly
        };
        builder
            .preopened_dir(&grant.host_path, grant.guest_path(), perms)
            .map_err(|source| GrantError {
                path: grant.host_path.clone(),
                source,
            })?;
    }
    Ok(builder.build())
}

/// A plugin's stdout or stderr: each stream the guest opens logs complete lines.
struct LogOutput {
    plugin: Arc<str>,
    stream: &'static str,
    budget: LogBudget,
}

impl LogOutput {
    fn new(plugin: &Arc<str>, stream: &'static str, budget: &LogBudget) -> Self {
        Self {
            plugin: plugin.clone(),
            stream,
            budget: budget.clone(),
        }
    }

    fn writer(&self) -> LineWriter {
        LineWriter {
            plugin: self.plugin.clone(),
            stream: self.stream,
            budget: self.budget.clone(),
            line: Vec::new(),
        }
    }
}

impl IsTerminal for LogOutput {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for LogOutput {
    fn p2_stream(&self) -> Box<dyn OutputStream> {
        Box::new(self.writer())
    }

    fn async_stream(&self) -> Box<dyn tokio::io::AsyncWrite + Send + Sync> {
        Box::new(self.writer())
    }
}

/// Buffers one line of plugin output and logs it when it ends (or the stream is dropped).
struct LineWriter {
    plugin: Arc<str>,
    stream: &'static str,
    budget: LogBudget,
    line: Vec<u8>,
}

impl LineWriter {
    fn push(&mut self, bytes: &[u8]) {
        for chunk in bytes.split_inclusive(|b| *b == b'\n') {
            let room = MAX_LOG_BYTES.saturating_sub(self.line.len());
            let (text, ended) = match chunk.strip_suffix(b"\n") {
                Some(text) => (text, true),
                None => (chunk, false),
            };
            self.line.extend_from_slice(&text[..text.len().min(room)]);
            if ended {
                self.emit();
            }
        }
    }

    fn emit(&mut self) {
        let line = std::mem::take(&mut self.line);
        if !self.budget.spend() {
            return;
        }
        // Invalid UTF-8 widens when replaced: cap the text again, on a character boundary.
        let text = String::from_utf8_lossy(&line);
        let text = crate::cap::prefix(text.trim_end_matches('\r'), MAX_LOG_BYTES);
        tracing::info!(plugin = &*self.plugin, stream = self.stream, "{text}");
    }
}

impl Drop for LineWriter {
    fn drop(&mut self) {
        if !self.line.is_empty() {
            self.emit();
        }
    }
}

impl OutputStream for LineWriter {
    fn write(&mut self, bytes: Bytes) -> StreamResult<()> {
        self.push(&bytes);
        Ok(())
    }

    fn flush(&mut self) -> StreamResult<()> {
        Ok(())
    }

    fn check_write(&mut self) -> StreamResult<usize> {
        Ok(64 * 1024)
    }
}

#[wasmtime_wasi::async_trait]
impl Pollable for LineWriter {
    async fn ready(&mut self) {}
}

impl tokio::io::AsyncWrite for LineWriter {
    fn poll_write(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        self.push(buf);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn writer(budget: u32) -> LineWriter {
        LogOutput::new(&Arc::from("p"), "stdout", &LogBudget::new(budget)).writer()
    }

    #[test]
    fn lines_are_split_capped_and_counted_against_the_budget() {
        let mut w = writer(2);
        w.push(b"one\ntw");
        assert_eq!(w.budget.left(), 1, "one line logged");
        assert_eq!(w.line, b"tw");
        w.push(b"o\nthree\nfour\n");
        assert_eq!(w.budget.left(), 0, "the budget stops at zero");
        assert!(w.line.is_empty());
        let mut long = writer(1);
        long.push(&vec![b'x'; 3 * MAX_LOG_BYTES]);
        assert_eq!(long.line.len(), MAX_LOG_BYTES);
    }
}
