use super::*;

/// A project directory named like a plugin (a temporary directory's own name is not a DNS
/// label).
struct TestProject {
    _tmp: tempfile::TempDir,
    path: PathBuf,
}

impl TestProject {
    fn path(&self) -> &Path {
        &self.path
    }
}

fn project_with(files: &[(&str, &str)]) -> TestProject {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("my-plugin");
    std::fs::create_dir(&path).unwrap();
    for (name, text) in files {
        std::fs::write(path.join(name), text).unwrap();
    }
    TestProject { _tmp: tmp, path }
}

fn message(error: ToolError) -> String {
    error.to_string()
}

#[test]
fn language_and_world_come_from_the_files() {
    let go = project_with(&[
        ("go.mod", "module x\n"),
        (
            "main.go",
            "import (\n\t\"wasmlet.dev/plugin\"\n\t\"wasmlet.dev/plugin/probe\"\n)\n",
        ),
    ]);
    let project = Project::open(go.path(), None, None).unwrap();
    assert_eq!(
        (project.lang, project.world),
        (Lang::Go, Some(World::ProbeHandler))
    );

    let py = project_with(&[(
        "app.py",
        "from wasmlet_plugin import parse_config\nfrom wasmlet_plugin.hooks import LifecycleHooks, world\n",
    )]);
    let project = Project::open(py.path(), None, None).unwrap();
    assert_eq!(
        (project.lang, project.world),
        (Lang::Python, Some(World::LifecycleHooks))
    );

    for import in ["'wasmlet-plugin-sdk/eviction'", "'../../src/eviction.js'"] {
        let js = project_with(&[(
            "component.js",
            &format!("import * as host from 'wasmlet:plugin/host@0.1.2';\nimport {{ evictionWorld }} from {import};\n"),
        )]);
        let project = Project::open(js.path(), None, None).unwrap();
        assert_eq!(
            (project.lang, project.world),
            (Lang::Js, Some(World::EvictionPolicy))
        );
    }

    // A Rust crate's world is known only once built.
    let rust = project_with(&[("Cargo.toml", "[package]\n")]);
    assert_eq!(Project::open(rust.path(), None, None).unwrap().world, None);
}

#[test]
fn the_manifest_wins_and_flags_must_agree() {
    let dir = project_with(&[
        (
            MANIFEST,
            "name: my-probe\nworld: probe-handler\nlang: python\nsdk: ../sdk-python\n",
        ),
        ("app.py", "from wasmlet_plugin.eviction import world\n"),
    ]);
    let project = Project::open(dir.path(), None, None).unwrap();
    assert_eq!(project.name, "my-probe");
    assert_eq!(project.world, Some(World::ProbeHandler));
    assert_eq!(project.sdk, Some(dir.path().join("../sdk-python")));

    let err = message(Project::open(dir.path(), Some(Lang::Go), None).unwrap_err());
    assert!(err.contains("--lang go but the project is python"), "{err}");
    let err = message(Project::open(dir.path(), None, Some(World::GcStrategy)).unwrap_err());
    assert!(
        err.contains("--world gc-strategy but the project is probe-handler"),
        "{err}"
    );
}

#[test]
fn what_cannot_be_told_is_named() {
    let empty = project_with(&[]);
    let err = message(Project::open(empty.path(), None, None).unwrap_err());
    assert!(err.contains("which language"), "{err}");

    let no_world = project_with(&[("app.py", "import json\n")]);
    let err = message(Project::open(no_world.path(), None, None).unwrap_err());
    assert!(err.contains("cannot tell the world"), "{err}");
    assert!(Project::open(no_world.path(), None, Some(World::ProbeHandler)).is_ok());

    let bad = project_with(&[(MANIFEST, "name: x\nworld: eviction-policy\nlang: cobol\n")]);
    let err = message(Project::open(bad.path(), None, None).unwrap_err());
    assert!(
        err.contains(MANIFEST) && err.contains("field `lang`"),
        "{err}"
    );

    let bad_name = project_with(&[(
        MANIFEST,
        "name: Not_A_Label\nworld: eviction-policy\nlang: go\n",
    )]);
    let err = message(Project::open(bad_name.path(), None, None).unwrap_err());
    assert!(err.contains("not a lowercase DNS label"), "{err}");

    let missing = empty.path().join("nowhere");
    let err = message(Project::open(&missing, None, None).unwrap_err());
    assert!(err.contains("not a directory"), "{err}");
}

#[test]
fn every_template_is_filled_and_opens_as_its_project() {
    let sdk = std::path::Path::new("/opt/wasmlet/plugins/sdk-x");
    for lang in Lang::ALL {
        assert_eq!(
            lang.worlds(),
            &World::ALL,
            "{} has every world",
            lang.as_str()
        );
        for &world in lang.worlds() {
            let files = scaffold::project_files("my-plugin", world, lang, sdk);
            let dir = project_with(&[]);
            for (name, text) in &files {
                for placeholder in ["@NAME@", "@TYPE@", "@WORLD@", "@SDK@"] {
                    assert!(
                        !text.contains(placeholder),
                        "{} {} {name}: {placeholder} is left",
                        lang.as_str(),
                        world.as_str()
                    );
                }
                let path = dir.path().join(name);
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                std::fs::write(path, text).unwrap();
            }
            let project = Project::open(dir.path(), None, None).unwrap();
            assert_eq!(project.lang, lang);
            assert_eq!(project.world, Some(world));
            assert_eq!(project.name, "my-plugin");
            assert_eq!(project.sdk.as_deref(), Some(sdk));
        }
    }
}
