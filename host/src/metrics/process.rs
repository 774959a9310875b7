//! `process_*`: what client_golang's process collector shows for a Go kubelet (CPU, memory,
//! file descriptors, start time), read from `/proc/self` at each scrape, without the `go_*`
//! runtime series a Rust process has no use for.

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use std::path::Path;

/// The values of one scrape; `None` where `/proc` did not say.
#[derive(Debug, Default, PartialEq)]
pub struct ProcessStats {
    /// User plus system CPU time.
    pub cpu_seconds: Option<f64>,
    /// Resident set size.
    pub resident_bytes: Option<u64>,
    /// Virtual memory size.
    pub virtual_bytes: Option<u64>,
    /// Start time since the Unix epoch.
    pub start_time_seconds: Option<f64>,
}

/// The fields of `/proc/<pid>/stat` this collector reads. `ticks` is USER_HZ, `page` the page
/// size, `boot` the boot time in seconds since the epoch.
pub fn parse_stat(text: &str, ticks: f64, page: u64, boot: Option<f64>) -> ProcessStats {
    // The command name may hold spaces and parentheses: fields start after the last ')'.
    let Some((_, rest)) = text.rsplit_once(')') else {
        return ProcessStats::default();
    };
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // Field N of proc(5) is at index N - 3 here (field 3, the state, comes first).
    let field = |n: usize| fields.get(n - 3).and_then(|f| f.parse::<u64>().ok());
    let cpu_seconds = match (field(14), field(15)) {
        (Some(user), Some(system)) if ticks > 0.0 => Some((user + system) as f64 / ticks),
        _ => None,
    };
    let start_time_seconds = match (field(22), boot) {
        (Some(start), Some(boot)) if ticks > 0.0 => Some(boot + start as f64 / ticks),
        _ => None,
    };
    ProcessStats {
        cpu_seconds,
        resident_bytes: field(24).map(|pages| pages.saturating_mul(page)),
        virtual_bytes: field(23),
        start_time_seconds,
    }
}

/// The machine's boot time (seconds since the epoch), which `process_start_time_seconds`
/// counts from; set once at start by whoever reads it (the stats module).
static BOOT_TIME: std::sync::OnceLock<f64> = std::sync::OnceLock::new();

/// Sets the boot time `process_start_time_seconds` is counted from.
pub fn set_boot_time(seconds_since_epoch: f64) {
    let _ = BOOT_TIME.set(seconds_since_epoch);
}

/// The `process_*` collector of this process.
#[derive(Debug, Default)]
pub struct ProcessCollector;

impl ProcessCollector {
    fn stats() -> ProcessStats {
        let Ok(text) = std::fs::read_to_string("/proc/self/stat") else {
            return ProcessStats::default();
        };
        let boot = BOOT_TIME.get().copied();
        parse_stat(
            &text,
            rustix::param::clock_ticks_per_second() as f64,
            rustix::param::page_size() as u64,
            boot,
        )
    }
}

fn open_fds() -> Option<u64> {
    Some(std::fs::read_dir(Path::new("/proc/self/fd")).ok()?.count() as u64)
}

fn limits() -> (Option<u64>, Option<u64>) {
    let nofile = rustix::process::getrlimit(rustix::process::Resource::Nofile).current;
    let address_space = rustix::process::getrlimit(rustix::process::Resource::As).current;
    (nofile, address_space)
}

fn gauge(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    value: Option<f64>,
) -> Result<(), std::fmt::Error> {
    let Some(value) = value else {
        return Ok(());
    };
    let metric = ConstGauge::new(value);
    metric.encode(encoder.encode_descriptor(name, help, None, metric.metric_type())?)
}

impl Collector for ProcessCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let stats = Self::stats();
        if let Some(seconds) = stats.cpu_seconds {
            let metric = ConstCounter::new(seconds);
            metric.encode(encoder.encode_descriptor(
                "process_cpu_seconds",
                "Total user and system CPU time spent in seconds.",
                None,
                metric.metric_type(),
            )?)?;
        }
        let (max_fds, max_virtual) = limits();
        let as_f64 = |v: Option<u64>| v.map(|v| v as f64);
        gauge(
            &mut encoder,
            "process_open_fds",
            "Number of open file descriptors.",
            as_f64(open_fds()),
        )?;
        gauge(
            &mut encoder,
            "process_max_fds",
            "Maximum number of open file descriptors.",
            as_f64(max_fds),
        )?;
        gauge(
            &mut encoder,
            "process_virtual_memory_bytes",
            "Virtual memory size in bytes.",
            as_f64(stats.virtual_bytes),
        )?;
        // No limit is shown as -1, as client_golang does.
        gauge(
            &mut encoder,
            "process_virtual_memory_max_bytes",
            "Maximum amount of virtual memory available in bytes.",
            Some(max_virtual.map_or(-1.0, |v| v as f64)),
        )?;
        gauge(
            &mut encoder,
            "process_resident_memory_bytes",
            "Resident memory size in bytes.",
            as_f64(stats.resident_bytes),
        )?;
        gauge(
            &mut encoder,
            "process_start_time_seconds",
            "Start time of the process since unix epoch in seconds.",
            stats.start_time_seconds,
        )?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stat_fields_after_a_command_with_spaces_and_parentheses() {
        // pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt
        // utime stime cutime cstime priority nice threads itreal starttime vsize rss ...
        let text = "42 (a (b) c) S 1 42 42 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 8 0 1000 123456789 2048 18446744073709551615";
        let stats = parse_stat(text, 100.0, 4096, Some(1_700_000_000.0));
        assert_eq!(stats.cpu_seconds, Some(3.0));
        assert_eq!(stats.start_time_seconds, Some(1_700_000_010.0));
        assert_eq!(stats.virtual_bytes, Some(123_456_789));
        assert_eq!(stats.resident_bytes, Some(2048 * 4096));
    }

    #[test]
    fn a_truncated_stat_gives_nothing_rather_than_wrong_numbers() {
        assert_eq!(
            parse_stat("42 (x", 100.0, 4096, None),
            ProcessStats::default()
        );
        let stats = parse_stat("42 (x) S 1 2", 100.0, 4096, Some(1.0));
        assert_eq!(stats, ProcessStats::default());
    }

    #[test]
    fn this_process_reports_itself() {
        // The agent sets the boot time at start; a test process has no agent.
        set_boot_time(1_600_000_000.0);
        let stats = ProcessCollector::stats();
        assert!(stats.resident_bytes.is_some_and(|b| b > 0));
        assert!(stats
            .start_time_seconds
            .is_some_and(|t| t > 1_600_000_000.0));
        assert!(open_fds().is_some_and(|n| n > 0));
    }
}
