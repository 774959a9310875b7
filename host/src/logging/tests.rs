use super::*;
use crate::config::logging::{parse_vmodule, VModuleItem};
use parking_lot::Mutex;
use serde_json::Value;
use std::sync::Arc;

/// Log output captured in memory.
#[derive(Clone, Default)]
struct Buffer(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Buffer {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Buffer {
    type Writer = Buffer;

    fn make_writer(&'a self) -> Buffer {
        self.clone()
    }
}

/// The JSON lines `body` logs through the JSON layer filtered by `filter`.
fn json_lines(filter: EnvFilter, body: impl FnOnce()) -> (String, Vec<Value>) {
    let buffer = Buffer::default();
    let subscriber = tracing_subscriber::registry().with(
        tracing_subscriber::fmt::layer()
            .fmt_fields(JsonFields)
            .event_format(JsonFormat)
            .with_writer(buffer.clone())
            .with_filter(filter),
    );
    tracing::subscriber::with_default(subscriber, body);
    let text = String::from_utf8(buffer.0.lock().clone()).unwrap();
    let lines = text
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{line}: {e}")))
        .collect();
    (text, lines)
}

fn everything() -> EnvFilter {
    EnvFilter::new("trace")
}

#[test]
fn an_event_is_one_object_in_upstreams_shape_with_its_span_fields() {
    let (text, lines) = json_lines(everything(), || {
        let span = tracing::info_span!("pod", pod = "web_default", uid = "u-1");
        let _entered = span.enter();
        tracing::info!(
            restarts = 3,
            ready = true,
            image = %"busybox",
            "container \"main\" started\n"
        );
    });
    assert_eq!(lines.len(), 1, "{text}");
    let line = &lines[0];
    // zap's key order: ts, caller, msg, v, then the logger's values and the call's.
    assert!(
        text.starts_with("{\"ts\":") && text.contains(",\"caller\":"),
        "{text}"
    );
    let at = |key: &str| {
        text.find(&format!("\"{key}\":"))
            .unwrap_or_else(|| panic!("{key}: {text}"))
    };
    assert!(at("ts") < at("caller") && at("caller") < at("msg") && at("msg") < at("v"));
    assert!(at("v") < at("pod") && at("uid") < at("restarts"), "{text}");
    let now_ms = SystemTimeMs::now();
    let ts = line["ts"].as_f64().expect("ts is a number");
    assert!(
        (now_ms - ts).abs() < 60_000.0,
        "ts {ts} is ms since the epoch"
    );
    let caller = line["caller"].as_str().unwrap();
    assert!(caller.starts_with("logging/tests.rs:"), "{caller}");
    assert_eq!(line["msg"], "container \"main\" started\n");
    assert_eq!(line["v"], 0);
    assert_eq!(line["pod"], "web_default");
    assert_eq!(line["uid"], "u-1");
    assert_eq!(line["restarts"], 3);
    assert_eq!(line["ready"], true);
    assert_eq!(line["image"], "busybox");
    assert!(line.get("err").is_none());
}

struct SystemTimeMs;

impl SystemTimeMs {
    fn now() -> f64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as f64
    }
}

#[test]
fn errors_go_under_err_and_error_lines_have_no_v() {
    let (text, lines) = json_lines(everything(), || {
        let error = std::io::Error::other("disk gone");
        tracing::error!(
            error = &error as &(dyn std::error::Error + 'static),
            file = "/var/lib/x",
            "cannot write"
        );
        tracing::warn!(%error, "retrying");
    });
    assert_eq!(lines.len(), 2, "{text}");
    assert_eq!(lines[0]["msg"], "cannot write");
    assert_eq!(lines[0]["err"], "disk gone");
    assert_eq!(lines[0]["file"], "/var/lib/x");
    assert!(
        lines[0].get("v").is_none(),
        "upstream's error lines: {text}"
    );
    assert!(lines[0].get("error").is_none());
    // As upstream, `err` closes the object.
    assert!(text
        .lines()
        .next()
        .unwrap()
        .ends_with(",\"err\":\"disk gone\"}"));
    assert_eq!(lines[1]["err"], "disk gone");
    assert_eq!(lines[1]["v"], 0);
}

#[test]
fn recorded_span_fields_and_levels_map_to_v() {
    let (text, lines) = json_lines(everything(), || {
        let span = tracing::debug_span!(
            "sync",
            pod = "web_default",
            sync_type = "create",
            result = tracing::field::Empty
        );
        let _entered = span.enter();
        span.record("result", "ok");
        tracing::debug!(wait_ms = 1500u64, "synced");
        tracing::trace!(ratio = 0.5, "detail");
    });
    assert_eq!(lines.len(), 2, "{text}");
    assert_eq!(lines[0]["v"], 2);
    assert_eq!(lines[0]["sync_type"], "create");
    assert_eq!(lines[0]["result"], "ok");
    assert_eq!(lines[0]["wait_ms"], 1500);
    assert_eq!(lines[1]["v"], 5);
    assert_eq!(lines[1]["ratio"], 0.5);
}

#[test]
fn verbosity_maps_onto_levels() {
    let logging = |verbosity, vmodule: &str| LoggingConfiguration {
        verbosity,
        vmodule: parse_vmodule(vmodule).unwrap(),
        ..Default::default()
    };
    assert_eq!(directives(&logging(0, "")).unwrap(), "info");
    assert_eq!(directives(&logging(1, "")).unwrap(), "info");
    assert_eq!(
        directives(&logging(2, "")).unwrap(),
        "info,wasmlet=debug,wasmlet_plugin_host=debug"
    );
    assert_eq!(
        directives(&logging(5, "gc=0")).unwrap(),
        "info,wasmlet=trace,wasmlet_plugin_host=trace,wasmlet::gc=info"
    );
    assert_eq!(
        directives(&logging(9, "")).unwrap(),
        "debug,wasmlet=trace,wasmlet_plugin_host=trace"
    );
    assert_eq!(
        directives(&logging(0, "pod_worker=3,eviction/pressure=7")).unwrap(),
        "info,wasmlet::pod_worker=debug,wasmlet::eviction::pressure=trace"
    );
    let bad = LoggingConfiguration {
        vmodule: vec![VModuleItem {
            file_pattern: "pod_*".into(),
            verbosity: 2,
        }],
        ..Default::default()
    };
    let err = directives(&bad).unwrap_err().to_string();
    assert!(err.contains("vmodule") && err.contains("glob"), "{err}");

    // What the filters let through, by target.
    let shown = |verbosity, vmodule: &str| {
        let filter = EnvFilter::new(directives(&logging(verbosity, vmodule)).unwrap());
        let (_, lines) = json_lines(filter, || {
            tracing::debug!(target: "wasmlet::gc", "gc debug");
            tracing::trace!(target: "wasmlet::gc", "gc trace");
            tracing::debug!(target: "wasmlet::eviction", "eviction debug");
            tracing::info!(target: "wasmlet::eviction", "eviction info");
            tracing::debug!(target: "hyper::proto", "hyper debug");
        });
        lines
            .iter()
            .map(|l| l["msg"].as_str().unwrap_or_default().to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(shown(0, ""), ["eviction info"]);
    assert_eq!(shown(0, "gc=2"), ["gc debug", "eviction info"]);
    assert_eq!(
        shown(5, "gc=1"),
        ["eviction debug", "eviction info"],
        "vmodule lowers one module too"
    );
    assert_eq!(
        shown(8, ""),
        [
            "gc debug",
            "gc trace",
            "eviction debug",
            "eviction info",
            "hyper debug"
        ]
    );
}

#[test]
fn verbosity_of_levels() {
    assert_eq!(verbosity_of(tracing::Level::ERROR), None);
    assert_eq!(verbosity_of(tracing::Level::WARN), Some(0));
    assert_eq!(verbosity_of(tracing::Level::INFO), Some(0));
    assert_eq!(verbosity_of(tracing::Level::DEBUG), Some(2));
    assert_eq!(verbosity_of(tracing::Level::TRACE), Some(5));
    for v in 0..12 {
        for level in [tracing::Level::DEBUG, tracing::Level::TRACE] {
            // A line's `v` is shown exactly from that verbosity on.
            let shown_at = verbosity_of(level).unwrap();
            assert_eq!(own_level(v) >= level, v >= shown_at, "v {v} {level}");
        }
    }
}
