//! The wire form of `rank`'s pod list: each pod as [`POD_WORDS`] little-endian `u64` words
//! (`wit/eviction.wit`). A flat `list<u64>` crosses the component boundary as one block copy,
//! where a `list<pod-info>` is lowered field by field; measured, that lowering was most of a
//! ranking call's cost. Host and SDK both use these two functions, so the layout has one
//! definition.
//!
//! | word | content |
//! |---|---|
//! | 0 | bits 0-31 `priority` (two's complement), 32-39 `qos` (0 guaranteed, 1 burstable, 2 best-effort), bit 40 `is-static`, 41 `is-critical`, 42 `has-stats` |
//! | 1-8 | `memory-request-bytes`, `memory-usage-bytes`, `cpu-request-millis`, `cpu-usage-millis`, `disk-request-bytes`, `disk-usage-bytes`, `inodes-used`, `process-count` |
//! | 9 | bits 0-31 `container-count`, 32-63 `restart-count` |
//! | 10 | `start-time-unix-ms` |

use crate::{PodInfo, QosClass};

/// Words per pod.
pub const POD_WORDS: usize = 11;

const STATIC: u64 = 1 << 40;
const CRITICAL: u64 = 1 << 41;
const HAS_STATS: u64 = 1 << 42;

/// Appends `pods` to `out` in the wire form.
pub fn pack_pods(pods: &[PodInfo], out: &mut Vec<u64>) {
    out.reserve(pods.len() * POD_WORDS);
    for p in pods {
        let qos = match p.qos {
            QosClass::Guaranteed => 0u64,
            QosClass::Burstable => 1,
            QosClass::BestEffort => 2,
        };
        let mut head = u64::from(p.priority as u32) | qos << 32;
        if p.is_static {
            head |= STATIC;
        }
        if p.is_critical {
            head |= CRITICAL;
        }
        if p.has_stats {
            head |= HAS_STATS;
        }
        out.extend_from_slice(&[
            head,
            p.memory_request_bytes,
            p.memory_usage_bytes,
            p.cpu_request_millis,
            p.cpu_usage_millis,
            p.disk_request_bytes,
            p.disk_usage_bytes,
            p.inodes_used,
            p.process_count,
            u64::from(p.container_count) | u64::from(p.restart_count) << 32,
            p.start_time_unix_ms,
        ]);
    }
}

/// Reads pods back from the wire form; an incomplete pod or an unknown QoS is an error.
pub fn unpack_pods(words: &[u64]) -> Result<Vec<PodInfo>, String> {
    if words.len() % POD_WORDS != 0 {
        return Err(format!(
            "pod list of {} words is not a multiple of {POD_WORDS}",
            words.len()
        ));
    }
    words
        .chunks_exact(POD_WORDS)
        .enumerate()
        .map(|(i, w)| {
            let qos = match (w[0] >> 32) & 0xff {
                0 => QosClass::Guaranteed,
                1 => QosClass::Burstable,
                2 => QosClass::BestEffort,
                other => return Err(format!("pod {i} has unknown qos {other}")),
            };
            Ok(PodInfo {
                priority: w[0] as u32 as i32,
                qos,
                is_static: w[0] & STATIC != 0,
                is_critical: w[0] & CRITICAL != 0,
                has_stats: w[0] & HAS_STATS != 0,
                memory_request_bytes: w[1],
                memory_usage_bytes: w[2],
                cpu_request_millis: w[3],
                cpu_usage_millis: w[4],
                disk_request_bytes: w[5],
                disk_usage_bytes: w[6],
                inodes_used: w[7],
                process_count: w[8],
                container_count: w[9] as u32,
                restart_count: (w[9] >> 32) as u32,
                start_time_unix_ms: w[10],
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_field_survives_the_round_trip() {
        let pods = vec![
            PodInfo {
                priority: -5,
                qos: QosClass::Guaranteed,
                is_static: true,
                is_critical: false,
                has_stats: true,
                memory_request_bytes: 1,
                memory_usage_bytes: 2,
                cpu_request_millis: 3,
                cpu_usage_millis: 4,
                disk_request_bytes: 5,
                disk_usage_bytes: 6,
                inodes_used: 7,
                process_count: 8,
                container_count: u32::MAX,
                restart_count: 9,
                start_time_unix_ms: u64::MAX,
            },
            PodInfo {
                priority: 2_000_000_000,
                qos: QosClass::BestEffort,
                is_critical: true,
                ..PodInfo::default()
            },
            PodInfo {
                priority: i32::MIN,
                qos: QosClass::Burstable,
                ..PodInfo::default()
            },
        ];
        let mut words = Vec::new();
        pack_pods(&pods, &mut words);
        assert_eq!(words.len(), 3 * POD_WORDS);
        assert_eq!(unpack_pods(&words), Ok(pods));
    }

    #[test]
    fn malformed_lists_are_refused() {
        assert!(unpack_pods(&[0; POD_WORDS + 1]).is_err());
        let mut words = vec![0; POD_WORDS];
        words[0] = 7 << 32;
        assert_eq!(unpack_pods(&words), Err("pod 0 has unknown qos 7".into()));
        assert_eq!(unpack_pods(&[]), Ok(vec![]));
    }
}
