//! `mdbook-listings`: the command mdBook runs as the `listings` preprocessor.
//!
//! mdBook calls it twice: `mdbook-listings supports RENDERER` (we support
//! every renderer, so exit 0), then with `[context, book]` as JSON on
//! standard input, expecting the edited book as JSON on standard output.

use mdbook_listings::{BookRegistry, Mode, process};
use serde_json::Value;
use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    if std::env::args().nth(1).as_deref() == Some("supports") {
        return ExitCode::SUCCESS;
    }
    match run() {
        Ok(book) => {
            println!("{book}");
            ExitCode::SUCCESS
        }
        Err(errors) => {
            for e in &errors {
                eprintln!("error: [listings] {e}");
            }
            eprintln!(
                "error: [listings] {} problem(s); the book was not built",
                errors.len()
            );
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<Value, Vec<String>> {
    let mut input = String::new();
    std::io::stdin()
        .read_to_string(&mut input)
        .map_err(|e| vec![format!("cannot read mdBook's input: {e}")])?;
    let parsed: Value = serde_json::from_str(&input)
        .map_err(|e| vec![format!("mdBook's input is not JSON: {e}")])?;
    let [context, mut book]: [Value; 2] = match parsed {
        Value::Array(pair) => pair.try_into().map_err(|_| {
            vec!["expected [context, book] from mdBook".to_string()]
        })?,
        _ => {
            return Err(vec![
                "expected [context, book] from mdBook".to_string(),
            ]);
        }
    };
    let root = PathBuf::from(context["root"].as_str().unwrap_or("."));
    let src =
        root.join(context["config"]["book"]["src"].as_str().unwrap_or("src"));
    let mode = match context["renderer"].as_str() {
        Some("test") => Mode::Test,
        _ => Mode::Render,
    };
    process(&mut book, &src, &BookRegistry, mode)?;
    Ok(book)
}
