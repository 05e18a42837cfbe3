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
