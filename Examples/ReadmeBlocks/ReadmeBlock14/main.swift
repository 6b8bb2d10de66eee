import Hoard

struct AvatarKey: CacheKey {
    var userID: Int
    var size: Int
    var cacheKeyString: String { "avatar/\(userID)/\(size)" }
}
