#[derive(Default)] pub(super) struct Pending;
