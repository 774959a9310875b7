//! The QoS-level cgroups under `kubepods`, as upstream's QoS container manager keeps them:
//! `besteffort` with the fewest CPU shares, `burstable` with the shares of the Burstable
//! pods' CPU requests together. Guaranteed pods sit directly under `kubepods` with their own
//! shares, so under contention each class gets CPU in proportion to what it requested.

use super::pod_limits::{dir, write_shares};
use super::{CGROUP_ROOT, PODS_CGROUP};
use crate::resources::{milli_cpu_to_shares, MIN_SHARES};
use std::io;
use std::path::Path;

/// Gives `kubepods/burstable` the shares of `burstable_cpu_millis` (the Burstable pods' CPU
/// requests summed) and `kubepods/besteffort` the fewest, creating them where needed.
pub fn set_qos_shares(burstable_cpu_millis: i64) -> io::Result<()> {
    set_qos_shares_at(Path::new(CGROUP_ROOT), burstable_cpu_millis)
}

/// [`set_qos_shares`] under the hierarchies mounted at `root`.
pub(super) fn set_qos_shares_at(root: &Path, burstable_cpu_millis: i64) -> io::Result<()> {
    let classes = [
        ("burstable", milli_cpu_to_shares(burstable_cpu_millis)),
        ("besteffort", MIN_SHARES),
    ];
    for (class, shares) in classes {
        let cpu = dir(root, "cpu", &format!("{PODS_CGROUP}/{class}"));
        std::fs::create_dir_all(&cpu)?;
        write_shares(root, &cpu, shares)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn burstable_gets_the_shares_of_its_requests_and_besteffort_the_fewest() {
        let read = |path: &Path| std::fs::read_to_string(path).unwrap_or_default();
        let v1 = tempfile::tempdir().expect("tempdir");
        set_qos_shares_at(v1.path(), 1500).expect("v1");
        let cpu = v1.path().join("cpu/kubepods");
        assert_eq!(read(&cpu.join("burstable/cpu.shares")), "1536");
        assert_eq!(read(&cpu.join("besteffort/cpu.shares")), "2");
        // No Burstable pod: the fewest shares too.
        set_qos_shares_at(v1.path(), 0).expect("v1");
        assert_eq!(read(&cpu.join("burstable/cpu.shares")), "2");

        let v2 = tempfile::tempdir().expect("tempdir");
        std::fs::write(v2.path().join("cgroup.controllers"), "cpu memory").expect("v2 marker");
        set_qos_shares_at(v2.path(), 1500).expect("v2");
        let pods = v2.path().join("kubepods");
        assert_eq!(read(&pods.join("burstable/cpu.weight")), "59");
        assert_eq!(read(&pods.join("besteffort/cpu.weight")), "1");
    }
}
