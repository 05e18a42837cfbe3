//! Where figures and outputs come from: the book's `figures` and
//! `listings` crates, or, in tests, a small fake.

/// Where figures and outputs come from. The book uses [`BookRegistry`];
/// tests use a small fake.
pub trait Registry: Sync {
    /// The SVG of the figure `name`.
    fn figure(&self, name: &str) -> Option<String>;
    fn figure_names(&self) -> Vec<&'static str>;
    fn output(&self, name: &str) -> Option<String>;
    fn output_names(&self) -> Vec<&'static str>;
}

/// The figures of the `figures` crate and the outputs of `listings`.
#[cfg(feature = "book")]
pub struct BookRegistry;

#[cfg(feature = "book")]
impl Registry for BookRegistry {
    fn figure(&self, name: &str) -> Option<String> {
        figures::find(name).map(|f| (f.render)())
    }
    fn figure_names(&self) -> Vec<&'static str> {
        figures::ALL.iter().map(|f| f.name).collect()
    }
    fn output(&self, name: &str) -> Option<String> {
        listings::outputs::find(name).map(|o| (o.run)())
    }
    fn output_names(&self) -> Vec<&'static str> {
        listings::outputs::ALL.iter().map(|o| o.name).collect()
    }
}

/// A registry whose figures and outputs are kept on disk between builds,
/// under a folder named by a key of everything that can change them: the
/// program that makes them (which holds the listings, the figures and the
/// data they include) and the files the listings read while they run
/// (`listings/src`, `listings/data`). Editing a chapter changes neither,
/// so the next build reuses every figure and output; editing a listing
/// rebuilds the program, and the next build makes them all again.
pub struct Cached<'a> {
    inner: &'a dyn Registry,
    dir: Option<std::path::PathBuf>,
}

impl<'a> Cached<'a> {
    /// Keep `inner`'s results under `root/target/listings-cache/KEY/`,
    /// removing the folders of older keys. Without a key (the program or
    /// the folders cannot be read), nothing is kept.
    pub fn new(inner: &'a dyn Registry, root: &std::path::Path) -> Self {
        let base = root.join("target/listings-cache");
        let dir = cache_key(root).map(|key| base.join(format!("{key:016x}")));
        if let Some(dir) = &dir {
            for old in std::fs::read_dir(&base).into_iter().flatten().flatten()
            {
                if old.path() != *dir {
                    let _ = std::fs::remove_dir_all(old.path());
                }
            }
            let _ = std::fs::create_dir_all(dir);
        }
        Cached { inner, dir }
    }

    fn kept(
        &self,
        kind: &str,
        name: &str,
        make: impl FnOnce() -> Option<String>,
    ) -> Option<String> {
        let Some(dir) = &self.dir else {
            return make();
        };
        let file = dir.join(format!("{kind}-{name}"));
        if let Ok(text) = std::fs::read_to_string(&file) {
            return Some(text);
        }
        let made = make()?;
        // Written whole, then renamed: a build stopped halfway leaves no
        // half-written result for the next one to read.
        let partial = dir.join(format!(".{kind}-{name}.partial"));
        if std::fs::write(&partial, &made).is_ok() {
            let _ = std::fs::rename(&partial, &file);
        }
        Some(made)
    }
}

impl Registry for Cached<'_> {
    fn figure(&self, name: &str) -> Option<String> {
        self.kept("figure", name, || self.inner.figure(name))
    }
    fn figure_names(&self) -> Vec<&'static str> {
        self.inner.figure_names()
    }
    fn output(&self, name: &str) -> Option<String> {
        self.kept("output", name, || self.inner.output(name))
    }
    fn output_names(&self) -> Vec<&'static str> {
        self.inner.output_names()
    }
}

/// FNV-1a over this program's bytes and over every file under
/// `listings/src` and `listings/data` (path and content, in sorted order).
fn cache_key(root: &std::path::Path) -> Option<u64> {
    let mut hash = crate::fnv::START;
    let mut add = |bytes: &[u8]| hash = crate::fnv::more(hash, bytes);
    add(&std::fs::read(std::env::current_exe().ok()?).ok()?);
    let mut files = Vec::new();
    let mut todo = vec![root.join("listings/src"), root.join("listings/data")];
    while let Some(dir) = todo.pop() {
        for entry in std::fs::read_dir(&dir).ok()?.flatten() {
            let path = entry.path();
            if path.is_dir() {
                todo.push(path);
            } else {
                files.push(path);
            }
        }
    }
    files.sort();
    for path in files {
        add(path.to_string_lossy().as_bytes());
        add(&std::fs::read(&path).ok()?);
    }
    Some(hash)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    struct Counting(AtomicUsize);

    impl Registry for Counting {
        fn figure(&self, name: &str) -> Option<String> {
            self.0.fetch_add(1, Ordering::SeqCst);
            (name != "missing").then(|| format!("<svg>{name}</svg>"))
        }
        fn figure_names(&self) -> Vec<&'static str> {
            vec!["f"]
        }
        fn output(&self, name: &str) -> Option<String> {
            self.0.fetch_add(1, Ordering::SeqCst);
            Some(format!("printed by {name}"))
        }
        fn output_names(&self) -> Vec<&'static str> {
            vec!["o"]
        }
    }

    #[test]
    fn a_kept_result_is_made_once_and_a_changed_listing_makes_it_again() {
        let root = std::env::temp_dir().join("listings-registry-cache");
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("listings/src")).unwrap();
        std::fs::create_dir_all(root.join("listings/data")).unwrap();
        std::fs::write(root.join("listings/src/lib.rs"), "// one").unwrap();
        let inner = Counting(AtomicUsize::new(0));
        let made = || inner.0.load(Ordering::SeqCst);
        // Two builds with nothing changed: each result made once.
        for _ in 0..2 {
            let cached = Cached::new(&inner, &root);
            assert_eq!(cached.figure("f").as_deref(), Some("<svg>f</svg>"));
            assert_eq!(cached.output("o").as_deref(), Some("printed by o"));
            assert_eq!(cached.figure("missing"), None);
        }
        assert_eq!(made(), 3 + 1, "f and o once; a missing figure each time");
        // A listing changes: the key changes, and everything is made again,
        // and only the new key's folder is left.
        std::fs::write(root.join("listings/src/lib.rs"), "// two").unwrap();
        let cached = Cached::new(&inner, &root);
        cached.output("o");
        assert_eq!(made(), 5);
        let folders = std::fs::read_dir(root.join("target/listings-cache"));
        assert_eq!(folders.unwrap().count(), 1);
        let _ = std::fs::remove_dir_all(&root);
    }
}
