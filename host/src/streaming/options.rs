//! The query parameters of the streaming endpoints, read as upstream's kubelet reads them
//! (`remotecommand.NewOptions`, `portforward.NewV4Options`, `getRun` in `server.go`).

use crate::cri::StreamOptions;
use std::borrow::Cow;

/// A query the endpoint cannot act on; the client gets 400 with the message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OptionsError {
    /// Neither stdin, stdout nor stderr was asked for.
    #[error("you must specify at least 1 of stdin, stdout, stderr")]
    NoStreams,
    /// `/exec` without a `command` parameter.
    #[error("query parameter \"command\" is required")]
    NoCommand,
    /// `/run` without a `cmd` parameter.
    #[error("query parameter \"cmd\" is required")]
    NoRunCommand,
    /// A WebSocket port-forward that names no port.
    #[error("query parameter \"port\" is required")]
    NoPort,
    /// A `port` parameter that is empty.
    #[error("query parameter \"port\" cannot be empty")]
    EmptyPort,
    /// A port that is not a number in 1..=65535.
    #[error("unable to parse {0:?} as a port: it must be a number from 1 to 65535")]
    BadPort(String),
}

/// What `/exec` runs and which streams it carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecOptions {
    /// The command and its arguments, one `command` parameter each.
    pub command: Vec<String>,
    /// The streams the client asked for.
    pub streams: StreamOptions,
}

fn pairs(query: Option<&str>) -> impl Iterator<Item = (Cow<'_, str>, Cow<'_, str>)> {
    form_urlencoded::parse(query.unwrap_or_default().as_bytes())
}

/// The first value of `key`, as Go's `FormValue` takes it.
fn first<'q>(query: Option<&'q str>, key: &str) -> Option<Cow<'q, str>> {
    pairs(query).find(|(k, _)| k == key).map(|(_, v)| v)
}

/// A stream flag: upstream's kubelet name (`input`, `output`, `error`, `tty`) set to `1`,
/// or the API's `PodExecOptions` name (`stdin`, `stdout`, `stderr`) set to `true` or `1`,
/// so a client that calls the kubelet with the API's names is understood too.
fn flag(query: Option<&str>, kubelet_name: &str, api_name: &str) -> bool {
    let set = |value: Cow<'_, str>| value == "1" || value == "true";
    first(query, kubelet_name)
        .or_else(|| first(query, api_name))
        .is_some_and(set)
}

/// The streams of an `/exec` or `/attach` request. A TTY carries no separate stderr, so
/// `stderr` is dropped with `tty` rather than refused, as upstream does.
pub fn stream_options(query: Option<&str>) -> Result<StreamOptions, OptionsError> {
    let tty = flag(query, "tty", "tty");
    let stdin = flag(query, "input", "stdin");
    let stdout = flag(query, "output", "stdout");
    let stderr = flag(query, "error", "stderr") && !tty;
    if !stdin && !stdout && !stderr {
        return Err(OptionsError::NoStreams);
    }
    Ok(StreamOptions {
        stdin,
        stdout,
        stderr,
        tty,
    })
}

/// The command (every `command` parameter, in order) and streams of an `/exec` request.
pub fn exec_options(query: Option<&str>) -> Result<ExecOptions, OptionsError> {
    let streams = stream_options(query)?;
    let command: Vec<String> = pairs(query)
        .filter(|(k, _)| k == "command")
        .map(|(_, v)| v.into_owned())
        .collect();
    if command.is_empty() {
        return Err(OptionsError::NoCommand);
    }
    Ok(ExecOptions { command, streams })
}

/// The command of a `/run` request: the `cmd` parameter split at each space, as upstream
/// ("for legacy reasons" one string, not repeated parameters).
pub fn run_command(query: Option<&str>) -> Result<Vec<String>, OptionsError> {
    match first(query, "cmd") {
        Some(cmd) if !cmd.is_empty() => Ok(cmd.split(' ').map(str::to_owned).collect()),
        _ => Err(OptionsError::NoRunCommand),
    }
}

/// The ports of a `/portForward` request. A WebSocket client names them in `port`
/// parameters (each may hold a comma-separated list); a SPDY client names a port per stream
/// later, so its request carries none.
pub fn port_forward_ports(query: Option<&str>, websocket: bool) -> Result<Vec<i32>, OptionsError> {
    if !websocket {
        return Ok(Vec::new());
    }
    let values: Vec<Cow<'_, str>> = pairs(query)
        .filter(|(k, _)| k == "port")
        .map(|(_, v)| v)
        .collect();
    if values.is_empty() {
        return Err(OptionsError::NoPort);
    }
    let mut ports = Vec::new();
    for value in values {
        if value.is_empty() {
            return Err(OptionsError::EmptyPort);
        }
        for part in value.split(',') {
            match part.parse::<u16>() {
                Ok(port) if port > 0 => ports.push(i32::from(port)),
                _ => return Err(OptionsError::BadPort(value.clone().into_owned())),
            }
        }
    }
    Ok(ports)
}
