//! CPU: the node's cumulative CPU time, and `usageNanoCores`, a rate that needs two samples.
//! cadvisor keeps the previous sample of every cgroup between its housekeeping runs and the
//! kubelet's CRI stats provider does the same per container (containerd reports no rate of its
//! own); [`UsageNanoCores`] is that memory.

use super::cgroup;
use super::{read, StatsError};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::path::Path;

/// A second request within this window of the last sample gets the last rate: a rate over a
/// few milliseconds says nothing.
const MIN_WINDOW_NS: i64 = 1_000_000_000;

/// Samples not refreshed for this long belong to cgroups and containers that are gone.
const FORGET_AFTER_NS: i64 = 10 * 60 * 1_000_000_000;

/// USER_HZ: /proc/stat counts in 1/100 s on every Linux architecture wasmlet runs on.
const CLOCK_TICKS_PER_SECOND: u64 = 100;

#[derive(Debug, Clone, Copy)]
struct Sample {
    at_ns: i64,
    total_ns: u64,
    rate: Option<u64>,
}

/// The last cumulative CPU sample of each cgroup or container, and the rate it gave.
#[derive(Debug, Default)]
pub struct UsageNanoCores(Mutex<HashMap<String, Sample>>);

impl UsageNanoCores {
    /// Records `total_ns` of CPU time read at `at_ns` (ns since the epoch) for `key` and returns
    /// the average rate in nanocores since the previous sample: `None` for a first sample or
    /// after the counter went backwards (a new cgroup under the same name).
    pub fn rate(&self, key: &str, at_ns: i64, total_ns: u64) -> Option<u64> {
        let mut samples = self.0.lock();
        let previous = samples.get(key).copied();
        let next = match previous {
            Some(last) if total_ns >= last.total_ns && at_ns >= last.at_ns => {
                if at_ns - last.at_ns < MIN_WINDOW_NS {
                    return last.rate;
                }
                let cores = u128::from(total_ns - last.total_ns) * 1_000_000_000
                    / (at_ns - last.at_ns) as u128;
                Sample {
                    at_ns,
                    total_ns,
                    rate: Some(u64::try_from(cores).unwrap_or(u64::MAX)),
                }
            }
            _ => Sample {
                at_ns,
                total_ns,
                rate: None,
            },
        };
        samples.insert(key.to_string(), next);
        next.rate
    }

    /// Forgets the samples not refreshed in the last ten minutes before `now_ns`.
    pub fn forget_stale(&self, now_ns: i64) {
        let mut samples = self.0.lock();
        samples.retain(|_, sample| now_ns - sample.at_ns < FORGET_AFTER_NS);
    }
}

/// The node's CPU time in nanoseconds: the root cgroup's counter (cgroup v1 `cpuacct.usage`,
/// v2 `cpu.stat`), else the busy time of /proc/stat.
pub fn node_usage_ns() -> Result<u64, StatsError> {
    if let Some(total) = cgroup::cpu_usage_ns("/") {
        return Ok(total);
    }
    let path = Path::new("/proc/stat");
    proc_stat_busy_ns(&read(path)?).ok_or_else(|| StatsError::MissingField {
        path: path.to_path_buf(),
        field: "cpu",
    })
}

/// The busy time of /proc/stat's `cpu` line (user, nice, system, irq, softirq, steal), in ns.
pub fn proc_stat_busy_ns(text: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with("cpu "))?;
    let fields: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .map(|f| f.parse().unwrap_or(0))
        .collect();
    // user nice system idle iowait irq softirq steal
    let busy: u64 = [0, 1, 2, 5, 6, 7]
        .iter()
        .filter_map(|&i| fields.get(i))
        .sum();
    Some(busy.saturating_mul(1_000_000_000 / CLOCK_TICKS_PER_SECOND))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECOND: i64 = 1_000_000_000;

    #[test]
    fn the_rate_needs_two_samples_a_second_apart() {
        let rates = UsageNanoCores::default();
        assert_eq!(rates.rate("pod", 10 * SECOND, 0), None);
        // Half a core over two seconds.
        assert_eq!(
            rates.rate("pod", 12 * SECOND, 1_000_000_000),
            Some(500_000_000)
        );
        // A second request within the window repeats the last rate and keeps the sample.
        assert_eq!(
            rates.rate("pod", 12 * SECOND + 1, 1_000_000_001),
            Some(500_000_000)
        );
        assert_eq!(
            rates.rate("pod", 14 * SECOND, 5_000_000_000),
            Some(2_000_000_000)
        );
        // Another key has its own samples.
        assert_eq!(rates.rate("other", 14 * SECOND, 5), None);
    }

    #[test]
    fn a_counter_that_went_backwards_starts_over() {
        let rates = UsageNanoCores::default();
        rates.rate("c", SECOND, 9_000);
        assert_eq!(rates.rate("c", 3 * SECOND, 10), None);
        assert_eq!(
            rates.rate("c", 5 * SECOND, 10 + 2 * SECOND as u64),
            Some(1_000_000_000)
        );
    }

    #[test]
    fn stale_samples_are_forgotten() {
        let rates = UsageNanoCores::default();
        rates.rate("gone", SECOND, 1);
        rates.rate("live", 700 * SECOND, 1);
        rates.forget_stale(701 * SECOND);
        assert_eq!(rates.rate("gone", 702 * SECOND, 2), None);
        assert!(rates.rate("live", 702 * SECOND, 2).is_some());
    }

    #[test]
    fn proc_stat_busy_time_excludes_idle_and_iowait() {
        let text = "cpu  100 20 30 5000 70 1 2 3 0 0\ncpu0 1 1 1 1 1 1 1 1 0 0\n";
        assert_eq!(
            proc_stat_busy_ns(text),
            Some((100 + 20 + 30 + 1 + 2 + 3) * 10_000_000)
        );
        assert_eq!(proc_stat_busy_ns("intr 1\n"), None);
    }

    #[test]
    fn the_node_has_used_cpu() {
        assert!(node_usage_ns().expect("node CPU") > 0);
    }
}
