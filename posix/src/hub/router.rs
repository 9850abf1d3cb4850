#[derive(Default)] pub(super) struct Subscriptions;
