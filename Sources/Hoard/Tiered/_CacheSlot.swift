/// What a ``Cache`` keeps in its memory tier for a key: a value, or the memory that
/// a fetch found nothing (negative caching).
@usableFromInline
enum _CacheSlot<Value: Sendable>: Sendable {
    case value(Value)
    case missing
}
