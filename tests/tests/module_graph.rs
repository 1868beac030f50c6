//! The workspace's shape: arrows only downwards (`scripts/module-graph --check`: no circle
//! among the crates, nor among the modules of any crate), and a thin CLI (bin/aether, argument
//! parsing and printing, at most 2,500 lines: the workflow lives in aether-workflow).

mod common;

#[test]
fn the_module_graph_has_no_circle() {
    let root = common::repo();
    let o = std::process::Command::new("python3")
        .arg(root.join("scripts/module-graph"))
        .arg("--check")
        .output()
        .expect("python3 runs scripts/module-graph");
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(text.contains("\n0 circle(s)"), "{text}");
    // the graph is read for real: the CLI's arrows into the workflow crate are there
    assert!(text.contains("aether -> aether-workflow"), "{text}");
    assert!(text.contains("tune -> runs"), "{text}");
}

#[test]
fn the_cli_is_thin() {
    let src = common::repo().join("bin/aether/src");
    let mut lines = 0;
    let mut stack = vec![src];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                lines += std::fs::read_to_string(&p).unwrap().lines().count();
            }
        }
    }
    assert!(
        lines <= 2500,
        "bin/aether/src has {lines} lines (at most 2,500)"
    );
}
