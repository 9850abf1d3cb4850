#[derive(Default)] pub(super) struct Relays;
