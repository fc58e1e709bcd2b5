//! A reader that closes `tessera`'s standard output early (`tessera ... | head`) ends the run
//! quietly with the status of SIGPIPE, never as an internal compiler error.

mod common;
use common::*;
use std::process::Stdio;

#[test]
fn closed_stdout_ends_quietly() {
    let mut child = tessera()
        .args([
            "run",
            "examples/kernels/2mm.c",
            "--entry",
            "mm2",
            "--mode",
            "interp",
            "-D",
            "ni=3",
            "-D",
            "nj=3",
            "-D",
            "nk=3",
            "-D",
            "nl=3",
            "-D",
            "alpha=1.5",
            "-D",
            "beta=1.2",
            "--repeat",
            "200",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Close the reading end before the first line is written.
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("internal compiler error"), "{err}");
    assert!(
        matches!(out.status.code(), Some(0) | Some(141)),
        "{:?} {err}",
        out.status
    );
}
