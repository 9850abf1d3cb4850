//! Catalog (being written).
pub(super) struct Catalog; impl Catalog { pub fn new(_n: usize) -> Catalog { Catalog } }
