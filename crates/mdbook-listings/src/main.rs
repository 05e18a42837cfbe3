//! `mdbook-listings`: the command mdBook runs as the `listings` preprocessor,
//! and, as `mdbook-listings katex-guard`, as a second pass after KaTeX.
//! As the preprocessor it expands the book ([`process`]) and fails on an
//! anchor that no chapter includes ([`orphan_anchors`]).
//!
//! mdBook calls it twice: `mdbook-listings [katex-guard] supports RENDERER`
//! (we support every renderer, so exit 0), then with `[context, book]` as
//! JSON on standard input, expecting the edited book on standard output.

use mdbook_listings::book::{Book, parse_input};
use mdbook_listings::{
    BookRegistry, Cached, Mode, katex_guard, orphan_anchors, process,
};
use std::io::Read;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let guard_pass = args.first().map(String::as_str) == Some("katex-guard");
    if args.iter().any(|a| a == "supports") {
        return ExitCode::SUCCESS;
    }
    let pass = if guard_pass {
        "katex-guard"
    } else {
        "listings"
    };
    let started = std::time::Instant::now();
    let result = read_input().and_then(|(context, mut book)| {
        if guard_pass {
            book.for_each_chapter_mut(|ch| {
                ch.content = katex_guard::guard(&ch.content);
            });
        } else {
            let src = context.root.join(&context.src);
            let mode = match context.renderer.as_str() {
                "test" => Mode::Test,
                _ => Mode::Render,
            };
            let orphans = orphan_anchors(&book, &src);
            // Figures and outputs kept from the last build if nothing that
            // makes them changed (see `Cached`).
            let registry = Cached::new(&BookRegistry, &context.root);
            let expanded = process(&mut book, &src, &registry, mode);
            let errors: Vec<String> = expanded
                .err()
                .into_iter()
                .flatten()
                .chain(orphans)
                .collect();
            if !errors.is_empty() {
                return Err(errors);
            }
        }
        Ok(book)
    });
    match result {
        Ok(book) => {
            println!("{}", book.into_json());
            // Where the build's time goes: mdBook's own time and KaTeX's
            // are the rest of `mdbook build`.
            let seconds = started.elapsed().as_secs_f64();
            eprintln!("[{pass}] the book's chapters in {seconds:.1} s");
            ExitCode::SUCCESS
        }
        Err(errors) => {
            for e in &errors {
                eprintln!("error: [{pass}] {e}");
            }
            eprintln!(
                "error: [{pass}] {} problem(s); the book was not built",
                errors.len()
            );
            ExitCode::FAILURE
        }
    }
}

/// mdBook's `[context, book]` from standard input.
fn read_input() -> Result<(mdbook_listings::book::Context, Book), Vec<String>> {
    let mut input = String::new();
    std::io::stdin()
        .read_to_string(&mut input)
        .map_err(|e| vec![format!("cannot read mdBook's input: {e}")])?;
    parse_input(&input).map_err(|e| vec![e])
}
