//! Lenient fields: each reads what it expects and takes anything else as absent, so that
//! a field of an unexpected type never fails its record (the forward compatibility of
//! [`super`]). Keys are borrowed, and containers a field does not want are skipped unread.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// A string field that reads as `None` when it holds anything other than a string.
#[derive(Default, Debug, Clone, PartialEq, Eq)]
pub struct LStr<'a>(pub Option<Cow<'a, str>>);

impl<'a> LStr<'a> {
    pub fn get(&self) -> Option<&str> {
        self.0.as_deref()
    }
}

/// A boolean field that reads as `false` unless it is the JSON literal `true`.
#[derive(Default, Debug, Clone, Copy, PartialEq, Eq)]
pub struct LBool(pub bool);

/// A non-negative integer field; anything else reads as `None`.
#[derive(Default, Debug, Clone, Copy, PartialEq, Eq)]
pub struct LU64(pub Option<u64>);

/// An object field; anything that is not an object reads as `None`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LMap<T>(pub Option<T>);

impl<T> Default for LMap<T> {
    fn default() -> Self {
        LMap(None)
    }
}

pub(crate) fn drain_map<'de, A: MapAccess<'de>>(mut map: A) -> Result<(), A::Error> {
    while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
    Ok(())
}

pub(crate) fn drain_seq<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<(), A::Error> {
    while seq.next_element::<IgnoredAny>()?.is_some() {}
    Ok(())
}

/// Any JSON value, reduced to the scalars a lenient field can use. Containers are
/// consumed unread.
pub(crate) enum Scalar<'de> {
    Str(Cow<'de, str>),
    Bool(bool),
    U64(u64),
    I64(i64),
    F64(f64),
    Null,
    Other,
}

impl<'de> Deserialize<'de> for Scalar<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Scalar<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Scalar::Str(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Scalar::Str(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(Scalar::Str(Cow::Owned(v)))
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
                Ok(Scalar::Bool(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
                Ok(Scalar::U64(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
                Ok(Scalar::I64(v))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
                Ok(Scalar::F64(v))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(Scalar::Null)
            }
            fn visit_map<A: MapAccess<'de>>(self, m: A) -> Result<Self::Value, A::Error> {
                drain_map(m).map(|_| Scalar::Other)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, s: A) -> Result<Self::Value, A::Error> {
                drain_seq(s).map(|_| Scalar::Other)
            }
        }
        d.deserialize_any(V)
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for LStr<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(match Scalar::deserialize(d)? {
            Scalar::Str(s) => LStr(Some(s)),
            _ => LStr(None),
        })
    }
}

impl<'de> Deserialize<'de> for LBool {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(LBool(matches!(Scalar::deserialize(d)?, Scalar::Bool(true))))
    }
}

impl<'de> Deserialize<'de> for LU64 {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(LU64(match Scalar::deserialize(d)? {
            Scalar::U64(v) => Some(v),
            Scalar::I64(v) => u64::try_from(v).ok(),
            Scalar::F64(v) if v.is_finite() && v >= 0.0 => Some(v as u64),
            _ => None,
        }))
    }
}

/// A token count from outside: a non-negative whole number of a sane size, or absent.
/// Anything else (`1.5e300`, `-3`, `2.5`, `"12"`, an object) is `Invalid`: counted as a
/// malformed field and taken as 0, never turned into a huge number.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub enum Tokens {
    #[default]
    Absent,
    /// `null`: absent for the roster; a cost report leaves the record out, as ccusage does.
    Null,
    Count(u64),
    Invalid,
}

/// More tokens than any message could use (2^40, about 10^12); also far below what JSON
/// readers hold exactly (2^53), so sums of many stay exact.
pub const MAX_TOKENS: u64 = 1 << 40;

impl Tokens {
    pub fn count(self) -> u64 {
        match self {
            Tokens::Count(n) => n,
            _ => 0,
        }
    }
}

impl<'de> Deserialize<'de> for Tokens {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(match Scalar::deserialize(d)? {
            Scalar::U64(v) if v <= MAX_TOKENS => Tokens::Count(v),
            Scalar::Null => Tokens::Null,
            _ => Tokens::Invalid,
        })
    }
}

/// Visitor methods for every JSON kind but the wanted ones: the value is consumed and
/// `$none` returned.
macro_rules! skip_scalars {
    ($none:expr) => {
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
            Ok($none)
        }
        fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
            Ok($none)
        }
        fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
            Ok($none)
        }
        fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
            Ok($none)
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok($none)
        }
    };
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for LMap<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = LMap<T>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                T::deserialize(de::value::MapAccessDeserializer::new(map)).map(|v| LMap(Some(v)))
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
                Ok(LMap(None))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, s: A) -> Result<Self::Value, A::Error> {
                drain_seq(s).map(|_| LMap(None))
            }
            skip_scalars!(LMap(None));
        }
        d.deserialize_any(V(PhantomData))
    }
}

/// A map key, borrowed when it has no escapes (keys never do in practice).
pub(crate) struct Key<'a>(pub(crate) Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Key<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a key")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Key(Cow::Owned(v.to_owned())))
            }
        }
        d.deserialize_str(V)
    }
}

/// A whole non-negative number, as JSON writes one (`429`, not `429.0`); anything else
/// reads as `None`. Stricter than [`LU64`], which also takes a float.
#[derive(Default, Debug, Clone, Copy, PartialEq, Eq)]
pub struct LUInt(pub Option<u64>);

impl<'de> Deserialize<'de> for LUInt {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(LUInt(match Scalar::deserialize(d)? {
            Scalar::U64(v) => Some(v),
            Scalar::I64(v) => u64::try_from(v).ok(),
            _ => None,
        }))
    }
}

/// A field and whether its key was there at all (with any value, `null` included).
#[derive(Default, Debug, Clone, PartialEq, Eq)]
pub struct Keyed<T> {
    pub present: bool,
    pub value: T,
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Keyed<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        T::deserialize(d).map(|value| Keyed { present: true, value })
    }
}

/// A struct of lenient fields read by key, the last of a repeated key winning (as a JSON
/// object read whole would have it) and unknown keys skipped unread.
macro_rules! lenient_struct {
    ($(#[$m:meta])* pub struct $name:ident<'a> { $($(#[$fm:meta])* $key:literal => $field:ident: $ty:ty,)* }) => {
        $(#[$m])*
        #[derive(Debug, Default)]
        pub struct $name<'a> {
            $($(#[$fm])* pub $field: $ty,)*
        }

        impl<'de: 'a, 'a> serde::Deserialize<'de> for $name<'a> {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct V<'a>(std::marker::PhantomData<&'a ()>);
                impl<'de: 'a, 'a> serde::de::Visitor<'de> for V<'a> {
                    type Value = $name<'a>;
                    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                        f.write_str("a JSON object")
                    }
                    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                        let mut out = $name::default();
                        while let Some(lenient::Key(key)) = map.next_key::<lenient::Key<'de>>()? {
                            match key.as_ref() {
                                $($key => out.$field = map.next_value()?,)*
                                _ => {
                                    map.next_value::<serde::de::IgnoredAny>()?;
                                }
                            }
                        }
                        Ok(out)
                    }
                }
                d.deserialize_map(V(std::marker::PhantomData))
            }
        }
    };
}
