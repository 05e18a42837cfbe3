//! The registry of printed results. `{{#output NAME}}` in a chapter runs the
//! entry named NAME while the book builds and shows what it prints, so no
//! number in the book is typed by hand.

use crate::attention;

/// A named experiment whose printout the book shows.
pub struct Output {
    pub name: &'static str,
    pub run: fn() -> String,
}

/// Every output the book can show, by name.
pub const ALL: &[Output] = &[
    Output {
        name: "attention-walkthrough",
        run: || attention::walkthrough_report().to_string(),
    },
    Output {
        name: "attention-probe-study",
        run: || attention::probe_study(100).to_string(),
    },
    Output {
        name: "attention-scale-study",
        run: || {
            let rows = attention::scale_study(&[4, 16, 64, 256], 50);
            attention::ScaleTable(rows).to_string()
        },
    },
];

/// The output named `name`, if there is one.
pub fn find(name: &str) -> Option<&'static Output> {
    ALL.iter().find(|o| o.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique() {
        for (i, a) in ALL.iter().enumerate() {
            for b in &ALL[i + 1..] {
                assert_ne!(a.name, b.name);
            }
        }
    }

    #[test]
    fn every_output_prints_something_and_the_same_thing_twice() {
        for o in ALL {
            let first = (o.run)();
            assert!(!first.trim().is_empty(), "{} printed nothing", o.name);
            assert!(!first.contains("NaN"), "{} printed a NaN", o.name);
            assert_eq!(first, (o.run)(), "{} is not deterministic", o.name);
        }
    }
}
