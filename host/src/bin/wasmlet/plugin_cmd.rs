//! `wasmlet plugin`: the tools for plugin authors (validate, test, new, build) and for
//! shipping plugins through an OCI registry (push, pull, sign), each a call into the
//! plugin host crate with its report printed.

use clap::Subcommand;
use std::path::PathBuf;

/// The `plugin` subcommands.
#[derive(Subcommand)]
pub(crate) enum PluginCommand {
    /// Check that a component implements a plugin world and configures and self-checks
    /// within its limits, under WASI deny-all plus the grants given here.
    ///
    /// The report ends with the WASI interfaces the component imports beyond io, clocks,
    /// random and cli stdio/exit (which every plugin gets), each with what the sandbox gives it:
    /// `wasi:filesystem/*` "no directory granted" or the granted directories,
    /// `wasi:cli/environment` "empty" or the granted names, `wasi:sockets/*` and `wasi:http/*`
    /// "denied". It is printed when the component is refused too, so a grant a language
    /// runtime needs shows there.
    Validate {
        file: PathBuf,
        /// eviction-policy, gc-strategy, probe-handler or lifecycle-hooks (detected if unset).
        #[arg(long)]
        world: Option<String>,
        /// The JSON passed to configure.
        #[arg(long, default_value = "{}")]
        config: String,
        #[arg(long, default_value_t = 50)]
        deadline_ms: u64,
        #[arg(long, default_value_t = 32)]
        memory_mib: u64,
        /// A host directory the plugin may read, as HOST or HOST:GUEST (repeatable); the
        /// same grant as `capabilities.directories` in the plugin config.
        #[arg(long = "grant-dir", value_parser = wasmlet_plugin_host::parse_grant)]
        grant_dirs: Vec<wasmlet_plugin_host::DirectoryGrant>,
        /// An environment variable the plugin sees, as NAME=VALUE (repeatable); the same
        /// grant as `capabilities.environment` in the plugin config.
        #[arg(long = "grant-env", value_parser = wasmlet_plugin_host::parse_env_grant)]
        grant_env: Vec<(String, String)>,
    },
    /// Write a ready-to-build plugin project for a world, in Rust, Go, Python or JavaScript.
    New {
        name: String,
        /// eviction-policy, gc-strategy, probe-handler or lifecycle-hooks.
        #[arg(long)]
        world: String,
        /// rust, go, python or js.
        #[arg(long, default_value = "rust")]
        lang: String,
        /// Where to create it (default: the current directory).
        #[arg(long, default_value = ".")]
        dir: PathBuf,
        /// The language's SDK: a directory (plugins/sdk, sdk-go, sdk-python or sdk-js, or a
        /// copy), or a package installed into the project: the Python wheel
        /// (`pip wheel plugins/sdk-python`) or the JavaScript tarball (`npm pack
        /// ./plugins/sdk-js`). Default: the SDK of the wasmlet checkout above here or above
        /// the wasmlet binary.
        #[arg(long)]
        sdk: Option<PathBuf>,
    },
    /// Build a plugin project of any SDK language into one component, DIR/<name>.wasm.
    Build {
        /// The project directory.
        #[arg(default_value = ".")]
        dir: PathBuf,
        /// rust, go, python or js (default: told by the project's files).
        #[arg(long)]
        lang: Option<String>,
        /// The world (default: told by the project's manifest or imports).
        #[arg(long)]
        world: Option<String>,
        /// The component to write (default: DIR/<name>.wasm).
        #[arg(long)]
        out: Option<PathBuf>,
        /// The language's SDK directory, for a project without a wasmlet-plugin.yaml outside a
        /// checkout.
        #[arg(long)]
        sdk: Option<PathBuf>,
        /// Where componentize-py, jco and the Go componentizer are installed (default:
        /// $WASMLET_PLUGIN_TOOLS, else ~/.cache/wasmlet/plugin-tools).
        #[arg(long)]
        tools_dir: Option<PathBuf>,
    },
    /// Run one decision on a snapshot file and print it beside the built-in default's.
    Test {
        file: PathBuf,
        #[arg(long)]
        fixture: PathBuf,
        #[arg(long, default_value = "{}")]
        config: String,
        /// A host directory the plugin may read, as HOST or HOST:GUEST (repeatable).
        #[arg(long = "grant-dir", value_parser = wasmlet_plugin_host::parse_grant)]
        grant_dirs: Vec<wasmlet_plugin_host::DirectoryGrant>,
        /// An environment variable the plugin sees, as NAME=VALUE (repeatable).
        #[arg(long = "grant-env", value_parser = wasmlet_plugin_host::parse_env_grant)]
        grant_env: Vec<(String, String)>,
    },
    /// Push a component to an OCI registry as a wasm artifact (CNCF layout); prints its digest.
    Push {
        file: PathBuf,
        /// oci://registry[:port]/repository:tag
        reference: String,
        #[command(flatten)]
        registry: RegistryFlags,
    },
    /// Pull a plugin artifact, check its digests, write its component; prints its digest.
    Pull {
        /// oci://registry[:port]/repository:tag or ...@sha256:<hex>
        reference: String,
        /// Where to write the component (default: <repository name>.wasm here).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Also require a signature by this PEM public key, as `verify.publicKey` does.
        #[arg(long)]
        key: Option<PathBuf>,
        #[command(flatten)]
        registry: RegistryFlags,
    },
    /// Sign a plugin artifact (a tag is resolved to its digest) with a P-256 private key in
    /// PEM, stored as cosign stores key-pair signatures.
    Sign {
        /// oci://registry[:port]/repository@sha256:<hex> or ...:tag
        reference: String,
        #[arg(long)]
        key: PathBuf,
        #[command(flatten)]
        registry: RegistryFlags,
    },
}

/// How `plugin push|pull|sign` reach a registry.
#[derive(clap::Args)]
pub(crate) struct RegistryFlags {
    /// Plain HTTP to a registry not on loopback (loopback registries get it unless --ca-file
    /// is given); every other registry is reached over HTTPS.
    #[arg(long, conflicts_with = "ca_file")]
    insecure: bool,
    /// A PEM file of CA certificates to trust for the registry besides the system roots (a
    /// registry with a private CA); with it a loopback registry is reached over HTTPS too.
    #[arg(long, value_name = "FILE")]
    ca_file: Option<PathBuf>,
    /// A docker-style config.json with credentials (default: $DOCKER_CONFIG/config.json,
    /// then ~/.docker/config.json).
    #[arg(long)]
    registry_config: Option<PathBuf>,
}

impl RegistryFlags {
    fn access(self) -> wasmlet_plugin_host::RegistryAccess {
        wasmlet_plugin_host::RegistryAccess {
            insecure: self.insecure,
            ca_file: self.ca_file,
            registry_config: self.registry_config,
        }
    }
}

/// `--world`: one of the plugin worlds.
fn parse_world(text: &str) -> anyhow::Result<wasmlet_plugin_host::World> {
    wasmlet_plugin_host::World::ALL
        .into_iter()
        .find(|known| known.as_str() == text)
        .ok_or_else(|| {
            anyhow::anyhow!("--world: unknown world {text:?} (eviction-policy, gc-strategy, probe-handler, lifecycle-hooks)")
        })
}

/// `--grant-dir` and `--grant-env` as the plugin config's `capabilities`; a name given twice
/// keeps its last value.
fn grants(
    directories: Vec<wasmlet_plugin_host::DirectoryGrant>,
    environment: Vec<(String, String)>,
) -> wasmlet_plugin_host::Capabilities {
    wasmlet_plugin_host::Capabilities {
        directories,
        environment: environment.into_iter().collect(),
        ..Default::default()
    }
}

/// `--lang`: one of the SDK languages.
fn parse_lang(text: &str) -> anyhow::Result<wasmlet_plugin_host::Lang> {
    wasmlet_plugin_host::Lang::parse(text)
        .ok_or_else(|| anyhow::anyhow!("--lang: unknown language {text:?} (rust, go, python, js)"))
}

/// Runs one `plugin` subcommand.
pub(crate) fn run(command: PluginCommand) -> anyhow::Result<()> {
    match command {
        PluginCommand::Validate {
            file,
            world,
            config,
            deadline_ms,
            memory_mib,
            grant_dirs,
            grant_env,
        } => {
            let world = world.as_deref().map(parse_world).transpose()?;
            let limits = wasmlet_plugin_host::Limits {
                deadline_ms,
                memory_mib,
                fuel: None,
            };
            let report = wasmlet_plugin_host::validate_plugin(
                &file,
                world,
                &config,
                limits,
                grants(grant_dirs, grant_env),
            )
            .inspect_err(|error| {
                // What it imports and was not granted, beside the reason on stderr.
                if let wasmlet_plugin_host::ToolError::Invalid { report, .. } = error {
                    println!("{report}");
                }
            })?;
            println!("{report}");
            Ok(())
        }
        PluginCommand::New {
            name,
            world,
            lang,
            dir,
            sdk,
        } => {
            let world = parse_world(&world)?;
            let lang = parse_lang(&lang)?;
            let root = wasmlet_plugin_host::new_plugin(&name, world, lang, &dir, sdk.as_deref())?;
            println!(
                "created {} (world {}, {})",
                root.display(),
                world.as_str(),
                lang.as_str()
            );
            Ok(())
        }
        PluginCommand::Build {
            dir,
            lang,
            world,
            out,
            sdk,
            tools_dir,
        } => {
            let options = wasmlet_plugin_host::BuildOptions {
                lang: lang.as_deref().map(parse_lang).transpose()?,
                world: world.as_deref().map(parse_world).transpose()?,
                out,
                sdk,
                tools_dir,
            };
            let built = wasmlet_plugin_host::build_project(&dir, &options)?;
            let world = built.project.world.map_or("?", |w| w.as_str());
            println!(
                "built {} (world {world}, {})",
                built.file.display(),
                built.project.lang.as_str()
            );
            Ok(())
        }
        PluginCommand::Test {
            file,
            fixture,
            config,
            grant_dirs,
            grant_env,
        } => {
            let grants = grants(grant_dirs, grant_env);
            let result = wasmlet_plugin_host::test_plugin(&file, &fixture, &config, &grants)?;
            println!("{}", serde_json::to_string_pretty(&result)?);
            Ok(())
        }
        PluginCommand::Push {
            file,
            reference,
            registry,
        } => {
            let report = wasmlet_plugin_host::push_plugin(&file, &reference, &registry.access())?;
            println!("{report}");
            Ok(())
        }
        PluginCommand::Pull {
            reference,
            out,
            key,
            registry,
        } => {
            let pulled = wasmlet_plugin_host::pull_plugin(
                &reference,
                out.as_deref(),
                key.as_deref(),
                &registry.access(),
            )?;
            println!(
                "pulled {reference}\n  digest: {}\n  sha256: {}\n  written to {}",
                pulled.digest,
                pulled.sha256,
                pulled.file.display()
            );
            Ok(())
        }
        PluginCommand::Sign {
            reference,
            key,
            registry,
        } => {
            let report = wasmlet_plugin_host::sign_plugin(&reference, &key, &registry.access())?;
            println!("{report}");
            Ok(())
        }
    }
}
