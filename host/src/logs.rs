//! Container logs as the kubelet serves them (`/containerLogs/{namespace}/{pod}/{container}`)
//! and `wasmlet logs` prints them: read from the CRI log files under `podLogsDir`, with
//! `tailLines`, `sinceSeconds`, `sinceTime`, `timestamps`, `previous`, `limitBytes`, `stream`
//! and `follow` meaning what they mean upstream (`PodLogOptions`).
//!
//! A log is streamed, never read whole: `tailLines` seeks back from the end of the file, and a
//! follower holds one open file and one entry at a time, so a large log or many followers cost
//! little memory. The stream is the response body itself: when the client goes away the body
//! is dropped and the file with it.

use bytes::Bytes;
use futures::Stream;
use std::future::Future;
use std::io::SeekFrom;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncSeekExt, BufReader};

/// Query parameters of the logs endpoint, upstream's `PodLogOptions` subset.
#[derive(Debug, Clone, Default, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LogOptions {
    /// `tailLines`: only the last N lines, so a long log is not sent whole.
    pub tail_lines: Option<u64>,
    /// `sinceSeconds`: only lines newer than this many seconds.
    pub since_seconds: Option<u64>,
    /// `sinceTime`: only lines written at or after this RFC 3339 time.
    pub since_time: Option<String>,
    /// `timestamps`: keep the runtime's RFC3339Nano timestamp in front of each line.
    #[serde(default)]
    pub timestamps: bool,
    /// `previous`: the log of the container's previous instance, to see why it crashed.
    #[serde(default)]
    pub previous: bool,
    /// `follow`: keep the response open and stream new lines as they are written.
    #[serde(default)]
    pub follow: bool,
    /// `limitBytes`: stop after this many bytes.
    pub limit_bytes: Option<u64>,
    /// `stream`: `All` (default), `Stdout` or `Stderr`.
    pub stream: Option<String>,
}

/// Why log options were refused; the text is what the client is told.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OptionsError {
    /// `limitBytes` must be at least 1, `sinceSeconds` too (upstream's validation).
    #[error("{field} must be greater than 0")]
    NotPositive {
        /// The query parameter.
        field: &'static str,
    },
    /// `sinceSeconds` and `sinceTime` exclude each other.
    #[error("at most one of sinceSeconds or sinceTime may be specified")]
    BothSince,
    /// `sinceTime` is not an RFC 3339 time.
    #[error("sinceTime {0:?} is not an RFC 3339 time")]
    SinceTime(String),
    /// `stream` is not one of upstream's three values.
    #[error("invalid stream type {0:?}")]
    Stream(String),
}

/// Which of the runtime's two streams are served.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Streams {
    All,
    Stdout,
    Stderr,
}

impl LogOptions {
    /// Checks what serde cannot, as upstream's `ValidatePodLogOptions` does.
    pub fn validate(&self) -> Result<(), OptionsError> {
        if self.limit_bytes == Some(0) {
            return Err(OptionsError::NotPositive {
                field: "limitBytes",
            });
        }
        if self.since_seconds == Some(0) {
            return Err(OptionsError::NotPositive {
                field: "sinceSeconds",
            });
        }
        if self.since_seconds.is_some() && self.since_time.is_some() {
            return Err(OptionsError::BothSince);
        }
        self.since(SystemTime::now())?;
        self.streams()?;
        Ok(())
    }

    /// The oldest time a served line may have.
    fn since(&self, now: SystemTime) -> Result<Option<SystemTime>, OptionsError> {
        if let Some(text) = &self.since_time {
            return entry_time(text.as_bytes())
                .map(Some)
                .ok_or_else(|| OptionsError::SinceTime(text.clone()));
        }
        Ok(self.since_seconds.map(|s| {
            now.checked_sub(Duration::from_secs(s))
                .unwrap_or(SystemTime::UNIX_EPOCH)
        }))
    }

    fn streams(&self) -> Result<Streams, OptionsError> {
        match self.stream.as_deref() {
            None | Some("All") => Ok(Streams::All),
            Some("Stdout") => Ok(Streams::Stdout),
            Some("Stderr") => Ok(Streams::Stderr),
            Some(other) => Err(OptionsError::Stream(other.to_string())),
        }
    }
}

/// One line of a CRI log file: `<RFC3339Nano> <stream> <P|F> <content>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogLine<'a> {
    /// When the runtime wrote the line (RFC3339Nano), used for `sinceSeconds` and `timestamps`.
    pub timestamp: &'a [u8],
    /// `stdout` or `stderr`.
    pub stream: &'a [u8],
    /// `P`: the line continues in the next entry (the runtime split a long line).
    pub partial: bool,
    /// The text, without the trailing newline (bytes: a program may write anything).
    pub content: &'a [u8],
}

/// Parses one CRI log entry (with or without its newline); `None` for a malformed line.
pub fn parse_line(line: &[u8]) -> Option<LogLine<'_>> {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let mut parts = line.splitn(4, |&b| b == b' ');
    let timestamp = parts.next().filter(|t| !t.is_empty())?;
    let stream = parts.next()?;
    let tag = parts.next()?;
    let content = parts.next().unwrap_or(b"");
    Some(LogLine {
        timestamp,
        stream,
        partial: tag.split(|&b| b == b':').next() == Some(b"P"),
        content,
    })
}

fn entry_time(timestamp: &[u8]) -> Option<SystemTime> {
    let text = std::str::from_utf8(timestamp).ok()?;
    let parsed: k8s_openapi::jiff::Timestamp = text.parse().ok()?;
    let nanos = parsed.as_nanosecond();
    (nanos >= 0).then(|| SystemTime::UNIX_EPOCH + Duration::from_nanos(nanos as u64))
}

/// The log file of attempt `restart_count` of a container.
pub fn log_file(pod_log_dir: &Path, container: &str, restart_count: u32) -> PathBuf {
    pod_log_dir
        .join(container)
        .join(format!("{restart_count}.log"))
}

/// The attempts of a container that have a log file in its directory, oldest first.
pub fn attempts(container_dir: &Path) -> std::io::Result<Vec<u32>> {
    let mut found: Vec<u32> = std::fs::read_dir(container_dir)?
        .filter_map(|entry| entry.ok())
        .filter_map(|entry| {
            entry
                .file_name()
                .to_str()?
                .strip_suffix(".log")?
                .parse()
                .ok()
        })
        .collect();
    found.sort_unstable();
    Ok(found)
}

/// The log directory of pod `namespace/name` under `pod_logs_dir` (`<ns>_<name>_<uid>`),
/// found without knowing the UID; with several (a pod recreated under another UID), the one
/// written last.
pub fn find_pod_log_dir(
    pod_logs_dir: &Path,
    namespace: &str,
    name: &str,
) -> std::io::Result<Option<PathBuf>> {
    // Neither a namespace nor a pod name may hold `_`, so the prefix is unambiguous.
    let prefix = format!("{namespace}_{name}_");
    let mut best: Option<(SystemTime, PathBuf)> = None;
    for entry in std::fs::read_dir(pod_logs_dir)? {
        let entry = entry?;
        if !entry.file_name().to_string_lossy().starts_with(&prefix) {
            continue;
        }
        let modified = entry
            .metadata()
            .and_then(|m| m.modified())
            .unwrap_or(SystemTime::UNIX_EPOCH);
        if best.as_ref().is_none_or(|(newest, _)| modified > *newest) {
            best = Some((modified, entry.path()));
        }
    }
    Ok(best.map(|(_, path)| path))
}

/// Bytes gathered before a chunk is handed to the client while more is ready to read.
const CHUNK: usize = 32 * 1024;
/// The longest entry kept whole; the runtime splits lines at 16 KiB, so only a file that was
/// not written by it has longer ones (they are cut, not buffered).
const MAX_ENTRY: usize = 1024 * 1024;
/// How often a follower looks for new lines at the end of the file.
const FOLLOW_POLL: Duration = Duration::from_millis(100);
/// How often a follower idle at the end of the file asks whether the container still runs.
const LIVENESS_PERIOD: Duration = Duration::from_secs(1);

/// Streams `file` as rendered log lines. With `follow`, keeps reading what is appended until
/// `still_running()` answers false (the container exited or was replaced); then whatever was
/// written before it stopped is sent and the stream ends.
pub fn stream<F, Fut>(
    file: PathBuf,
    options: LogOptions,
    still_running: F,
) -> impl Stream<Item = std::io::Result<Bytes>> + Send + 'static
where
    F: FnMut() -> Fut + Send + 'static,
    Fut: Future<Output = bool> + Send,
{
    let now = SystemTime::now();
    let follower = Follower {
        since: options.since(now).ok().flatten(),
        streams: options.streams().unwrap_or(Streams::All),
        budget: options.limit_bytes.unwrap_or(u64::MAX),
        file,
        options,
        reader: None,
        entry: Vec::new(),
        at_line_start: true,
        still_running,
        last_check: None,
        draining: false,
        finished: false,
    };
    futures::stream::unfold(follower, |mut follower| async move {
        match follower.next_chunk().await {
            Ok(Some(chunk)) => Some((Ok(chunk), follower)),
            Ok(None) => None,
            Err(error) => {
                follower.finished = true;
                Some((Err(error), follower))
            }
        }
    })
}

/// The state of one log stream between chunks.
struct Follower<F> {
    file: PathBuf,
    options: LogOptions,
    since: Option<SystemTime>,
    streams: Streams,
    /// What `limitBytes` still allows.
    budget: u64,
    reader: Option<BufReader<tokio::fs::File>>,
    /// The entry being read (it may end past the current end of the file while following).
    entry: Vec<u8>,
    /// Whether the next content starts a line (a `P` entry continues in the next one).
    at_line_start: bool,
    still_running: F,
    last_check: Option<Instant>,
    /// The container has stopped: read to the end once more, then finish.
    draining: bool,
    finished: bool,
}

impl<F, Fut> Follower<F>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    async fn next_chunk(&mut self) -> std::io::Result<Option<Bytes>> {
        if self.finished {
            return Ok(None);
        }
        if self.reader.is_none() {
            let mut file = tokio::fs::File::open(&self.file).await?;
            let start = match self.options.tail_lines {
                Some(lines) => tail_start(&mut file, lines).await?,
                None => 0,
            };
            file.seek(SeekFrom::Start(start)).await?;
            self.reader = Some(BufReader::new(file));
        }
        let mut out = Vec::new();
        loop {
            if self.budget == 0 {
                self.finished = true;
                return Ok((!out.is_empty()).then(|| Bytes::from(out)));
            }
            let Some(reader) = self.reader.as_mut() else {
                return Ok(None);
            };
            if read_entry(reader, &mut self.entry).await? {
                self.render(&mut out);
                self.entry.clear();
                if out.len() >= CHUNK {
                    return Ok(Some(Bytes::from(out)));
                }
                continue;
            }
            // The end of the file: send what is gathered before waiting for more.
            if !out.is_empty() {
                return Ok(Some(Bytes::from(out)));
            }
            if !self.options.follow || self.draining {
                self.finished = true;
                return Ok(None);
            }
            if self
                .last_check
                .is_none_or(|at| at.elapsed() >= LIVENESS_PERIOD)
            {
                self.last_check = Some(Instant::now());
                if !(self.still_running)().await {
                    self.draining = true;
                    continue;
                }
            }
            tokio::time::sleep(FOLLOW_POLL).await;
        }
    }

    /// Appends the current entry as the client sees it, within the byte budget.
    fn render(&mut self, out: &mut Vec<u8>) {
        let Some(line) = parse_line(&self.entry) else {
            return;
        };
        let wanted = match self.streams {
            Streams::All => true,
            Streams::Stdout => line.stream == b"stdout",
            Streams::Stderr => line.stream == b"stderr",
        };
        if !wanted {
            return;
        }
        if let Some(since) = self.since {
            if entry_time(line.timestamp).is_some_and(|at| at < since) {
                return;
            }
        }
        let mut push = |bytes: &[u8], budget: &mut u64| {
            let take = bytes
                .len()
                .min(usize::try_from(*budget).unwrap_or(usize::MAX));
            out.extend_from_slice(&bytes[..take]);
            *budget -= take as u64;
        };
        if self.at_line_start && self.options.timestamps {
            push(line.timestamp, &mut self.budget);
            push(b" ", &mut self.budget);
        }
        push(line.content, &mut self.budget);
        if !line.partial {
            push(b"\n", &mut self.budget);
        }
        self.at_line_start = !line.partial;
    }
}

/// Reads up to and including the next newline into `entry`; `false` at the end of the file
/// (what was read of an unfinished entry stays in `entry`). An entry longer than
/// [`MAX_ENTRY`] keeps only its start.
async fn read_entry(
    reader: &mut BufReader<tokio::fs::File>,
    entry: &mut Vec<u8>,
) -> std::io::Result<bool> {
    loop {
        let buffer = reader.fill_buf().await?;
        if buffer.is_empty() {
            return Ok(false);
        }
        let (used, complete) = match buffer.iter().position(|&b| b == b'\n') {
            Some(newline) => (newline + 1, true),
            None => (buffer.len(), false),
        };
        let room = MAX_ENTRY.saturating_sub(entry.len());
        entry.extend_from_slice(&buffer[..used.min(room)]);
        reader.consume(used);
        if complete {
            if !entry.ends_with(b"\n") {
                entry.push(b'\n');
            }
            return Ok(true);
        }
    }
}

/// Bytes of an entry's start enough to read its timestamp, stream and tag.
const HEAD: usize = 64;
/// How much is read at a time when scanning back for `tailLines`.
const TAIL_CHUNK: u64 = 64 * 1024;

/// The offset where the last `lines` complete log lines start. It scans back from the end in
/// chunks, counting entries tagged `F` (a line ends with one; `P` entries are its pieces), and
/// looks at no more than each entry's first bytes.
async fn tail_start(file: &mut tokio::fs::File, lines: u64) -> std::io::Result<u64> {
    let len = file.metadata().await?.len();
    if lines == 0 {
        return Ok(len);
    }
    let mut full_lines = 0u64;
    // The end of the newest complete entry not yet counted (after its newline).
    let mut entry_end: Option<u64> = None;
    // The first bytes after the chunk being scanned (the head of an entry that starts in it).
    let mut later: Vec<u8> = Vec::new();
    let mut chunk_end = len;
    let mut chunk = Vec::new();
    while chunk_end > 0 {
        let chunk_start = chunk_end.saturating_sub(TAIL_CHUNK);
        chunk.resize((chunk_end - chunk_start) as usize, 0);
        file.seek(SeekFrom::Start(chunk_start)).await?;
        file.read_exact(&mut chunk).await?;
        chunk.extend_from_slice(&later);
        let scanned = (chunk_end - chunk_start) as usize;
        for index in (0..scanned).rev().filter(|&i| chunk[i] == b'\n') {
            let start = chunk_start + index as u64 + 1;
            if let Some(end) = entry_end {
                let head = &chunk[index + 1..(index + 1 + HEAD).min(chunk.len())];
                if is_full_entry(head) {
                    full_lines += 1;
                    if full_lines > lines {
                        return Ok(end);
                    }
                }
            }
            entry_end = Some(start);
        }
        chunk.truncate(HEAD.min(chunk.len()));
        later = std::mem::take(&mut chunk);
        chunk_end = chunk_start;
    }
    // The oldest entry starts the file.
    if let Some(end) = entry_end {
        if is_full_entry(&later) {
            full_lines += 1;
            if full_lines > lines {
                return Ok(end);
            }
        }
    }
    Ok(0)
}

/// Whether the entry starting with `head` ends a line (tag `F`).
fn is_full_entry(head: &[u8]) -> bool {
    let mut parts = head.splitn(4, |&b| b == b' ');
    let (_, _, tag) = (parts.next(), parts.next(), parts.next());
    tag.is_some_and(|tag| tag.split(|&b| b == b':').next() == Some(b"F"))
}

#[cfg(test)]
mod tests;
