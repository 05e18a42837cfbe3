//! `cargo xtask <command>`: the book's build and test entry points.
//!
//! ```text
//! cargo xtask setup   install mdbook 0.5.4, mdbook-katex 0.10.0, KaTeX's CSS + fonts and
//!                     playwright-core if missing (chromium: only `test` and `browser`)
//! cargo xtask build   setup, then build the book into book/ and check the HTML
//! cargo xtask serve   setup, build, then serve on http://localhost:3000 and rebuild on change
//! cargo xtask browser setup, build, then the browser check (headless chromium)
//! cargo xtask test    setup, fmt, clippy, cargo test (each outcome recorded in
//!                     target/verification/), mdbook test, build with that
//!                     record + checks, browser check, failure checks
//! cargo xtask retrieval  retrain the retrieval sweep (release, all cores)
//!                     into target/retrieval.tsv (`--commit`: rewrite
//!                     listings/data/retrieval.tsv); `--only LANE,...`
//!                     retrains only those lanes and keeps the others' rows
//! cargo xtask recall  retrain the recall comparison of "After the paper"
//!                     (release, all cores; under 15 minutes on two cores)
//!                     into target/recall.tsv (`--commit`: rewrite
//!                     listings/data/recall.tsv)
//! cargo xtask tracking  train the parity and modulo-3 study of "The
//!                     transition's spectrum" (release, all cores; a few
//!                     minutes) into target/tracking.tsv (`--commit`:
//!                     rewrite listings/data/tracking.tsv)
//! cargo xtask lm    train the language-model study (release, all cores)
//!                     into target/lm.tsv (`--commit`: rewrite
//!                     listings/data/lm.tsv)
//! cargo xtask mqar   train the recall comparison in Zoology's setting
//!                     (release, all cores; about half an hour on two
//!                     cores) into target/mqar.tsv (`--commit`: rewrite
//!                     listings/data/mqar.tsv); `--rewrite` trains its
//!                     rewrite variant into target/mqar-rewrite.tsv
//!                     (`--commit`: listings/data/mqar-rewrite.tsv)
//! cargo xtask mqar --state   recall against state size: the rules at
//!                     widths 8 and 64, sliding-window attention, a hybrid
//!                     (about ten CPU-minutes) into target/mqar-state.tsv
//!                     (`--commit`: rewrite listings/data/mqar-state.tsv)
//! cargo xtask prose   the words per chapter, the longest sentences and the
//!                     symbols Appendix A lacks, enforced (no build)
//! cargo xtask bench   time every schedule at f32 (release, one thread) beside
//!                     the matmul ceiling; tables + JSON in target/bench/;
//!                     `--commit` also rewrites listings/data/bench.tsv;
//!                     then the time of a warm rebuild of the book
//! cargo xtask mutants   mutation testing of the anchored listing functions
//!                     (cargo-mutants, sharded), merged per file into
//!                     listings/data/mutants.tsv
//! cargo xtask bench crossover   softmax against linear attention, prefill
//!                     and decode, into target/bench/crossover.tsv
//! cargo xtask bench rules   the update rules' table and targets only
//!                     (`--commit`: also listings/data/crossover.tsv)
//! cargo xtask bench paths   the f32 forms on every dispatch path the CPU runs
//! ```

use std::process::ExitCode;
use xtask::{Failure, book, root, run, setup};

const USAGE: &str =
    "usage: cargo xtask <setup | build | serve | browser | test | retrieval |
                    recall | tracking | lm | mqar | prose | bench | mutants>

  setup   install the pinned tools (mdbook 0.5.4, mdbook-katex 0.10.0),
          and with npm ci KaTeX's stylesheet and fonts and playwright-core
          (the browser check's driver), where missing
  build   setup, then build the book into book/ and check every page
  serve   setup, build, then serve the book on http://localhost:3000
  browser setup, build, then open every page in headless chromium and
          check what a reader sees; screenshots in target/screenshots/
  test    setup, then cargo fmt --check, clippy, cargo test (every
          outcome recorded in target/verification/record.tsv), mdbook
          test, the book build with that record (each claim mark shows its
          result; the verification report page sums up the run) and its
          checks, the browser check, and the checks' own tests
  retrieval  train every model of the retrieval chapter at the paper's
          scale (release mode, every core, about a hundred CPU-minutes) and
          write target/retrieval.tsv; prints each run's wall and CPU time
          and each lane's total
  retrieval --only LANE,...  retrain only those lanes (e.g.
          tanh/fwm/setting2) and keep every other lane's committed rows
  retrieval --commit  rewrite listings/data/retrieval.tsv instead, the
          file the book's figures read
  recall  train the one-layer recall models of \"After the paper\", every
          update rule and softmax at every number of pairs (release mode,
          every core, under 15 minutes on two cores) into
          target/recall.tsv; with --commit rewrite listings/data/recall.tsv,
          which the chapter's figure reads
  tracking [--commit]  train the one-layer models of \"The transition's
          spectrum\" on parity and counting modulo 3 (the delta rule,
          diagonal gates and DeltaProduct with two writes per token, both
          eigenvalue ranges) and on the word problem of S3 (DeltaProduct
          with one to three writes), every seed (release mode, every core, a
          few minutes on two cores) into target/tracking.tsv; with
          --commit rewrite listings/data/tracking.tsv instead, which the
          chapter's table reads
  lm [--commit]  train the byte-level language models of \"The
          language-modelling result, small\" (six fast-weight layers, three
          seeds; release mode, every core, about twenty minutes on two
          cores) on the King James Bible that `setup` installs, into
          target/lm.tsv; with --commit rewrite listings/data/lm.tsv
  mqar [--commit]  train the two-layer recall models of \"After the
          paper\" in Zoology's setting, every rule and softmax at two
          widths, three learning rates and three seeds (release mode, every
          core, about half an hour on two cores) into target/mqar.tsv; with
          --commit rewrite listings/data/mqar.tsv, which the chapter reads
  mqar --rewrite [--commit]  the same models on the rewrite variant (half
          of the keys written twice, the latest value asked), every rule
          and softmax at two widths, three rates and three seeds (about
          twelve minutes on two cores) into target/mqar-rewrite.tsv; with
          --commit rewrite listings/data/mqar-rewrite.tsv, which the
          chapter reads
  mqar --state [--commit]  recall against state size: the rules at
          widths 8 and 64, sliding-window softmax attention at four
          windows, a hybrid of a gated-delta and a window layer (release
          mode, every core) into target/mqar-state.tsv; with --commit
          rewrite listings/data/mqar-state.tsv, which the chapter reads
  prose   print the prose words per chapter, the longest sentences and
          the symbols of display math that Appendix A lacks, and fail on
          a breach of the limits (no build; the build fails on them too)
  bench   time every schedule of the book at f32 on one thread (release
          mode, about three minutes) beside this machine's f32
          matrix-multiply throughput, and a step of the retrieval trainer
          beside its f64 reference; prints tables and the target ratios,
          the decode table and where linear attention starts to win;
          writes target/bench/ (latest.json, bench.tsv, crossover.tsv);
          with --commit also rewrites listings/data/bench.tsv, the table
          Appendix E prints; then builds the book twice and prints how
          long the second, warm build took (target: under ten seconds)
  bench crossover  only the softmax targets, the decode table and the
          crossover lengths (a few minutes), into target/bench/; with
          --commit also listings/data/crossover.tsv, which Appendix E's
          figure reads
  bench paths  the main f32 forms timed on every dispatch path this CPU
          runs (AVX-512, AVX2+FMA, scalar), side by side; writes nothing
  mutants [--file PATH]... [--shard k/n] [--merge-only]
          mutation testing (cargo-mutants 27.1.0, installed if missing) of
          the functions inside the anchors of each listings file (every
          file with an anchor unless --file names some), shard k of n
          (from 0), in a worktree of HEAD under target/mutants/; merges
          the counts into listings/data/mutants.tsv, keyed by each file's
          hash. About two minutes per mutant that compiles: not part of
          `cargo xtask test`";

fn main() -> ExitCode {
    let command = std::env::args().nth(1).unwrap_or_default();
    let result = match command.as_str() {
        "setup" => setup::all(),
        "build" => build(),
        "serve" => serve(),
        "browser" => browser(),
        "test" => test(),
        "retrieval" => retrieval(),
        "recall" => {
            let args: Vec<String> = std::env::args().skip(2).collect();
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            release_example(
                "training the recall comparison",
                "recall_sweep",
                &args,
            )
        }
        "tracking" => {
            let args: Vec<String> = std::env::args().skip(2).collect();
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            release_example(
                "training the tracking study",
                "tracking_sweep",
                &args,
            )
        }
        "lm" => {
            let args: Vec<String> = std::env::args().skip(2).collect();
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            setup::kjv_text(&root()).and_then(|()| {
                release_example(
                    "training the language-model study",
                    "lm_sweep",
                    &args,
                )
            })
        }
        "mqar" => {
            let args: Vec<String> = std::env::args().skip(2).collect();
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            release_example(
                "training the recall comparison in Zoology's setting",
                "mqar_sweep",
                &args,
            )
        }
        "bench" => bench(),
        "mutants" => {
            let args: Vec<String> = std::env::args().skip(2).collect();
            xtask::mutants::mutants(&args)
        }
        "prose" => prose(),
        "" | "help" | "--help" | "-h" => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        other => Err(Failure(format!("unknown command `{other}`\n\n{USAGE}"))),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure(why)) => {
            eprintln!("\nxtask {command}: FAILED\n{why}");
            ExitCode::FAILURE
        }
    }
}

/// The prose and notation checks alone, enforced, without building.
fn prose() -> Result<(), Failure> {
    let root = root();
    let prose = xtask::prose::check(&root, true);
    xtask::notation::check(&root, true)?;
    prose
}

fn build() -> Result<(), Failure> {
    setup::all()?;
    let pages = book::build(&root())?;
    println!("xtask build: {pages} pages built into book/ and checked");
    Ok(())
}

fn browser() -> Result<(), Failure> {
    build()?;
    let root = root();
    let summary = xtask::browser::check(
        &root,
        &root.join("target/screenshots"),
        &xtask::browser::MUST_FIND,
    )?;
    println!("xtask browser: {summary}");
    Ok(())
}

fn retrieval() -> Result<(), Failure> {
    let args: Vec<String> = std::env::args().skip(2).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    release_example("retraining the retrieval sweep", "retrieval_sweep", &args)
}

fn bench() -> Result<(), Failure> {
    let args: Vec<String> = std::env::args().skip(2).collect();
    if let Some(other) = args.iter().find(|a| {
        !["crossover", "rules", "paths", "--commit"].contains(&a.as_str())
    }) {
        return Err(Failure(format!(
            "unknown bench argument `{other}` (crossover, rules, paths, \
             --commit)\n\n\
             {USAGE}"
        )));
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let crossover = args.contains(&"crossover");
    let rules = args.contains(&"rules") || args.contains(&"paths");
    let what = if args.contains(&"paths") {
        "timing the f32 forms on every dispatch path this CPU runs"
    } else if crossover {
        "timing softmax against linear attention, prefill and decode"
    } else if rules {
        "timing the update rules of the family against the tuned delta rule"
    } else {
        "benchmarking every schedule"
    };
    release_binary(what, "bench", &args)?;
    if !crossover && !rules {
        warm_rebuild()?;
    }
    Ok(())
}

/// The most a rebuild may take after one chapter is edited.
const REBUILD_TARGET_SECONDS: f64 = 10.0;

/// Build the book once (so that everything is compiled and kept), then
/// again as after editing a chapter, and print how long the second took
/// against its target.
fn warm_rebuild() -> Result<(), Failure> {
    xtask::step("a warm rebuild of the book, as after editing one chapter");
    build()?;
    let started = std::time::Instant::now();
    book::build(&root())?;
    let seconds = started.elapsed().as_secs_f64();
    let verdict = match seconds < REBUILD_TARGET_SECONDS {
        true => "met",
        false => "not met; the phases above say where the time went",
    };
    println!(
        "warm rebuild after editing one chapter: {seconds:.1} s \
         (target < {REBUILD_TARGET_SECONDS:.0} s: {verdict})"
    );
    Ok(())
}

/// Run one of `listings`' examples in release mode, announcing `what`.
fn release_example(
    what: &str,
    example: &str,
    args: &[&str],
) -> Result<(), Failure> {
    xtask::step(&format!("{what} (cargo run --release --example {example})"));
    let mut all = vec![
        "run",
        "--release",
        "--quiet",
        "--package",
        "listings",
        "--example",
        example,
    ];
    if !args.is_empty() {
        all.push("--");
        all.extend(args);
    }
    run("cargo", &all, &root())
}

/// Run the binary crate `package` in release mode, announcing `what`.
fn release_binary(
    what: &str,
    package: &str,
    args: &[&str],
) -> Result<(), Failure> {
    xtask::step(&format!("{what} (cargo run --release -p {package})"));
    let mut all = vec!["run", "--release", "--quiet", "--package", package];
    if !args.is_empty() {
        all.push("--");
        all.extend(args);
    }
    run("cargo", &all, &root())
}

fn serve() -> Result<(), Failure> {
    build()?;
    xtask::step("mdbook serve on http://localhost:3000 (Ctrl-C to stop)");
    // Rebuilds show the Try-it outputs of the build above.
    let root = root();
    let mut serve = std::process::Command::new("mdbook");
    serve.args(["serve", "--port", "3000"]).current_dir(&root);
    if let Some(dir) = book::try_it_outputs(&root)? {
        serve.env(mdbook_listings::TRY_IT_VAR, dir);
    }
    let status = serve
        .status()
        .map_err(|e| Failure(format!("could not start `mdbook`: {e}")))?;
    if status.success() {
        Ok(())
    } else {
        Err(Failure(format!("`mdbook serve` failed ({status})")))
    }
}

fn test() -> Result<(), Failure> {
    let root = root();
    setup::all()?;
    // The browser check's chromium, now, so that a missing one stops the
    // run before the long steps rather than after them.
    setup::chromium()?;
    xtask::step("cargo fmt --check");
    run("cargo", &["fmt", "--all", "--", "--check"], &root)?;
    xtask::step("cargo clippy (warnings are errors)");
    run(
        "cargo",
        &[
            "clippy",
            "--workspace",
            "--all-targets",
            "--quiet",
            "--",
            "-D",
            "warnings",
        ],
        &root,
    )?;
    // Every test's outcome, recorded, so that the book built below shows
    // each claim's result in this run (and fails on a failed one).
    let record = xtask::record::run_tests(&root)?;
    xtask::claims::check_ran(&root)?;
    book::mdbook_test(&root)?;
    let pages = book::build_recorded(&root, &record)?;
    let browser = xtask::browser::check(
        &root,
        &root.join("target/screenshots"),
        &xtask::browser::MUST_FIND,
    )?;
    xtask::step(
        "the checks' own tests: broken books must fail the build and the \
         browser check",
    );
    xtask::record::run_ignored(&root, &record)?;
    // Built again from the completed record, so that the marks of the
    // checks' own tests say how they did rather than "ignored".
    xtask::step("the book again, its record now holding the checks' own tests");
    book::build_recorded(&root, &record)?;
    println!(
        "\nxtask test: every step passed (fmt, clippy, cargo test, mdbook test, \
         {pages} pages built and checked, failure checks)\n{browser}\n\
         screenshots: target/screenshots/"
    );
    Ok(())
}
