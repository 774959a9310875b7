//! What a component imports from WASI beyond what every plugin gets, and what the sandbox
//! gives each of those imports under a plugin's grants. `wasmlet plugin validate` prints it,
//! so an author whose language runtime needs a directory or an environment variable sees
//! which grant is missing instead of only a failed `configure`.

use crate::config::Capabilities;
use wasmtime::component::Component;

/// What every plugin gets whatever its grants (stdin closed, stdout and stderr to the host's
/// log), and so is left out of the list; the words of the report's heading.
pub(crate) const ALWAYS_GIVEN: &str = "io, clocks, random and cli stdio, exit and terminal";

/// A WASI interface whose answer depends on the grants (or that the sandbox never gives).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reach {
    /// `wasi:filesystem/*`: only the granted directories exist.
    Filesystem,
    /// `wasi:cli/environment`: only the granted variables, and no arguments.
    Environment,
    /// `wasi:sockets/*`: linked, every operation refused.
    Sockets,
    /// `wasi:http/*` or any other WASI package: not linked, so the component is refused.
    Unlinked,
}

/// The sandbox's answer to one import, for the report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct WasiImport {
    /// The interface as the component names it (`wasi:filesystem/preopens@0.2.3`).
    pub name: String,
    /// What the plugin gets through it under the grants.
    pub given: String,
}

/// The component's WASI imports beyond [`ALWAYS_GIVEN`], in its import order, each with what
/// `grants` gives it.
pub(crate) fn imports(component: &Component, grants: &Capabilities) -> Vec<WasiImport> {
    let types = component.component_type();
    let names = types.imports(component.engine()).map(|(name, _)| name);
    describe(names, grants)
}

fn describe<'a>(
    names: impl IntoIterator<Item = &'a str>,
    grants: &Capabilities,
) -> Vec<WasiImport> {
    names
        .into_iter()
        .filter_map(|name| {
            reach(name).map(|reach| WasiImport {
                name: name.to_string(),
                given: given(reach, grants),
            })
        })
        .collect()
}

/// `None` for an interface every plugin gets, and for imports that are not WASI.
fn reach(name: &str) -> Option<Reach> {
    let (package, interface) = name.strip_prefix("wasi:")?.split_once('/')?;
    let interface = interface.split('@').next().unwrap_or(interface);
    match (package, interface) {
        ("io" | "clocks" | "random", _) => None,
        ("cli", "environment") => Some(Reach::Environment),
        ("cli", _) => None,
        ("filesystem", _) => Some(Reach::Filesystem),
        ("sockets", _) => Some(Reach::Sockets),
        _ => Some(Reach::Unlinked),
    }
}

fn given(reach: Reach, grants: &Capabilities) -> String {
    match reach {
        Reach::Filesystem if grants.directories.is_empty() => "no directory granted".into(),
        Reach::Filesystem => grants
            .directories
            .iter()
            .map(|d| {
                let access = if d.writable {
                    "read-write"
                } else {
                    "read-only"
                };
                format!("{} as {} ({access})", d.host_path.display(), d.guest_path())
            })
            .collect::<Vec<_>>()
            .join(", "),
        Reach::Environment if grants.environment.is_empty() => "empty".into(),
        // Names only: the values may be secrets, and the author knows them.
        Reach::Environment => grants
            .environment
            .keys()
            .cloned()
            .collect::<Vec<_>>()
            .join(", "),
        Reach::Sockets => "denied (no TCP, UDP or name lookup)".into(),
        Reach::Unlinked => "denied (not linked: the host refuses the component)".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::DirectoryGrant;

    const RUST_STD: [&str; 7] = [
        "wasi:cli/environment@0.2.3",
        "wasi:cli/exit@0.2.3",
        "wasi:io/streams@0.2.3",
        "wasi:cli/stdout@0.2.3",
        "wasi:clocks/wall-clock@0.2.3",
        "wasi:filesystem/types@0.2.3",
        "wasi:filesystem/preopens@0.2.3",
    ];

    fn listed(names: &[&str], grants: &Capabilities) -> Vec<(String, String)> {
        describe(names.iter().copied(), grants)
            .into_iter()
            .map(|i| (i.name, i.given))
            .collect()
    }

    #[test]
    fn deny_all_lists_what_grants_would_change_and_nothing_every_plugin_gets() {
        let mut names = RUST_STD.to_vec();
        names.extend([
            "wasmlet:plugin/host@0.1.2",
            "wasi:sockets/tcp@0.2.3",
            "wasi:http/outgoing-handler@0.2.3",
        ]);
        assert_eq!(
            listed(&names, &Capabilities::default()),
            [
                ("wasi:cli/environment@0.2.3", "empty"),
                ("wasi:filesystem/types@0.2.3", "no directory granted"),
                ("wasi:filesystem/preopens@0.2.3", "no directory granted"),
                (
                    "wasi:sockets/tcp@0.2.3",
                    "denied (no TCP, UDP or name lookup)"
                ),
                (
                    "wasi:http/outgoing-handler@0.2.3",
                    "denied (not linked: the host refuses the component)"
                ),
            ]
            .map(|(n, g)| (n.to_string(), g.to_string()))
        );
    }

    #[test]
    fn grants_show_by_guest_path_and_variable_name_never_value() {
        let grants = Capabilities {
            directories: vec![DirectoryGrant {
                host_path: "/etc/keep".into(),
                guest_path: Some("/keep".into()),
                writable: false,
            }],
            environment: [("MODE".to_string(), "s3cret".to_string())].into(),
            ..Default::default()
        };
        let listed = listed(
            &[
                "wasi:filesystem/preopens@0.2.3",
                "wasi:cli/environment@0.2.3",
            ],
            &grants,
        );
        assert_eq!(listed[0].1, "/etc/keep as /keep (read-only)");
        assert_eq!(listed[1].1, "MODE");
    }
}
