//! Making what the book shows: every figure and output, once each, before
//! any chapter is expanded.

use crate::number::{Index, Kind};
use crate::registry::Registry;
use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Every figure and output the book shows, made once each.
pub(crate) struct Made {
    /// Each figure's SVG.
    pub(crate) figures: HashMap<String, String>,
    pub(crate) outputs: HashMap<String, String>,
}

/// Run the experiments behind every figure and output the book shows,
/// once each, on every core: they are independent, and together they are
/// most of the build's time.
pub(crate) fn make_all(index: &Index, registry: &dyn Registry) -> Made {
    let jobs: Vec<&(Kind, String)> = index
        .keys()
        .filter(|(kind, _)| *kind != Kind::Listing)
        .collect();
    let next = AtomicUsize::new(0);
    let done = Mutex::new(Made {
        figures: HashMap::new(),
        outputs: HashMap::new(),
    });
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    std::thread::scope(|scope| {
        for _ in 0..threads.min(jobs.len().max(1)) {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    let Some((kind, name)) = jobs.get(i).map(|j| (j.0, &j.1))
                    else {
                        break;
                    };
                    if kind == Kind::Figure {
                        if let Some(fig) = registry.figure(name) {
                            let mut made =
                                done.lock().expect("no job panicked");
                            made.figures.insert(name.clone(), fig);
                        }
                    } else if let Some(text) = registry.output(name) {
                        let mut made = done.lock().expect("no job panicked");
                        made.outputs.insert(name.clone(), text);
                    }
                }
            });
        }
    });
    done.into_inner().expect("no job panicked")
}
