//! A list that is nearly always one element long (the messages, request
//! ids and answers of a POST, which batches only lengthen): that one is
//! kept inline, so a plain request allocates no list for it.

/// Empty, one element inline, or more in a `Vec`.
#[derive(Debug, Default)]
pub(crate) enum Few<T> {
    #[default]
    Empty,
    One(T),
    Many(Vec<T>),
}

impl<T> Few<T> {
    pub fn one(t: T) -> Few<T> {
        Few::One(t)
    }

    pub fn push(&mut self, t: T) {
        *self = match std::mem::take(self) {
            Few::Empty => Few::One(t),
            Few::One(a) => Few::Many(vec![a, t]),
            Few::Many(mut v) => {
                v.push(t);
                Few::Many(v)
            }
        };
    }

    pub fn as_slice(&self) -> &[T] {
        match self {
            Few::Empty => &[],
            Few::One(t) => std::slice::from_ref(t),
            Few::Many(v) => v,
        }
    }

    pub fn iter(&self) -> std::slice::Iter<'_, T> {
        self.as_slice().iter()
    }

    pub fn len(&self) -> usize {
        self.as_slice().len()
    }

    pub fn is_empty(&self) -> bool {
        self.as_slice().is_empty()
    }

    /// Keeps the elements `keep` is true of.
    pub fn retain(&mut self, mut keep: impl FnMut(&T) -> bool) {
        match self {
            Few::Empty => {}
            Few::One(t) => {
                if !keep(t) {
                    *self = Few::Empty;
                }
            }
            Few::Many(v) => v.retain(keep),
        }
    }
}

impl<T> IntoIterator for Few<T> {
    type Item = T;
    type IntoIter = std::iter::Chain<std::option::IntoIter<T>, std::vec::IntoIter<T>>;

    fn into_iter(self) -> Self::IntoIter {
        let (one, many) = match self {
            Few::Empty => (None, Vec::new()),
            Few::One(t) => (Some(t), Vec::new()),
            Few::Many(v) => (None, v),
        };
        one.into_iter().chain(many)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_element_stays_inline_and_more_keep_their_order() {
        let mut f = Few::default();
        assert!(f.is_empty());
        f.push(1);
        assert!(matches!(f, Few::One(1)));
        f.push(2);
        f.push(3);
        assert_eq!(f.as_slice(), [1, 2, 3]);
        f.retain(|x| *x != 2);
        assert_eq!((f.len(), f.iter().copied().collect::<Vec<_>>()), (2, vec![1, 3]));
        assert_eq!(f.into_iter().collect::<Vec<_>>(), [1, 3]);
        let mut g = Few::one(5);
        g.retain(|x| *x != 5);
        assert!(g.is_empty() && g.into_iter().next().is_none());
    }
}
