import Foundation

extension DiskStore {
    /// The value for `key`, decoded as `Value`, or `nil`.
    ///
    /// Intact bytes that do not decode as `Value` (another type's value, or one
    /// written by an older version of the type) are a miss reported as
    /// ``DiskStoreEvent/undecodable(_:)`` with reason
    /// ``StoreDamage/Reason/undecodableValue``, and the entry stays: a read never
    /// destroys intact data, and a read as the right type still finds it. The call
    /// returns `nil` rather than throwing, so a stale format never breaks a read.
    /// Only damage (see ``entry(for:in:)``) removes an entry.
    ///
    /// ```swift
    /// let user = try store.value(for: "user:42", as: User.self, in: "users")
    /// ```
    ///
    /// - Parameters:
    ///   - key: The key; its ``CacheKey/cacheKeyString`` is what is stored.
    ///   - type: The value's type; can be inferred from the context.
    ///   - namespace: The namespace. Defaults to ``defaultNamespace``.
    ///   - codec: How to decode. Defaults to ``ValueCodec/automatic()``: the type's
    ///     ``CacheValue`` encoding, or JSON for `Codable` types.
    /// - Returns: The value, or `nil` when there is no live, decodable entry.
    /// - Throws: ``HoardError/Code/noCodec`` when `Value` has no automatic codec;
    ///   otherwise as ``entry(for:in:)``.
    public func value<Value: Sendable>(
        for key: some CacheKey, as type: Value.Type = Value.self, in namespace: String = DiskStore.defaultNamespace,
        codec: ValueCodec<Value>? = nil
    ) throws(HoardError) -> Value? {
        try entry(for: key, as: type, in: namespace, codec: codec)?.value
    }

    /// The entry for `key` (decoded value, stored date, expiry), with the same rules
    /// as ``value(for:as:in:codec:)``.
    public func entry<Value: Sendable>(
        for key: some CacheKey, as type: Value.Type = Value.self, in namespace: String = DiskStore.defaultNamespace,
        codec: ValueCodec<Value>? = nil
    ) throws(HoardError) -> CacheEntry<Value>? {
        let codec = try Self.codec(codec)
        let key = _normalized(key.cacheKeyString)
        let namespace = _normalized(namespace)
        guard let stored = try _entry(for: key, in: namespace) else { return nil }
        do {
            let value = try codec.decode(stored.data)
            return CacheEntry(value: value, storedAt: stored.storedAt, expiresAt: stored.expiresAt)
        } catch {
            let reason = "\(error.message)\(error.underlying.map { " (\($0))" } ?? "")"
            observers.publish([
                .undecodable(
                    StoreDamage(
                        namespace: namespace, key: key, reason: .undecodableValue,
                        detail:
                            "\(stored.data.count) intact bytes do not decode as \(Value.self): \(reason); the entry was kept"
                    ))
            ])
            return nil
        }
    }

    /// Stores `value` for `key`, encoded by `codec`, replacing any older value.
    ///
    /// ```swift
    /// try store.set(user, for: "user:42", expires: .hours(1), in: "users")
    /// ```
    ///
    /// - Parameters:
    ///   - value: The value.
    ///   - key: The key; its ``CacheKey/cacheKeyString`` is what is stored.
    ///   - expires: The entry's lifetime. `nil` (the default) uses
    ///     ``Configuration/defaultExpiry``.
    ///   - namespace: The namespace. Defaults to ``defaultNamespace``.
    ///   - codec: How to encode. Defaults to ``ValueCodec/automatic()``.
    /// - Throws: ``HoardError/Code/noCodec`` or ``HoardError/Code/encodingFailed``
    ///   before anything is written; otherwise as
    ///   ``set(_:for:in:storedAt:expiresAt:)``.
    public func set<Value: Sendable>(
        _ value: Value, for key: some CacheKey, expires: Expiry? = nil,
        in namespace: String = DiskStore.defaultNamespace, codec: ValueCodec<Value>? = nil
    ) throws(HoardError) {
        let codec = try Self.codec(codec)
        let data = try codec.encode(value)
        let now = clock.now()
        try set(
            data, for: key.cacheKeyString, in: namespace, storedAt: now,
            expiresAt: (expires ?? configuration.defaultExpiry).date(storedAt: now))
    }

    /// Removes the entry for `key`.
    ///
    /// - Returns: Whether there was one.
    @discardableResult
    public func removeValue(for key: some CacheKey, in namespace: String = DiskStore.defaultNamespace)
        throws(HoardError) -> Bool
    {
        try removeValue(for: key.cacheKeyString, in: namespace)
    }

    /// Whether the store holds a live entry for `key`. Does not read the value and
    /// does not count as an access.
    public func contains(_ key: some CacheKey, in namespace: String = DiskStore.defaultNamespace) throws(HoardError)
        -> Bool
    {
        try contains(key.cacheKeyString, in: namespace)
    }

    /// `codec`, or the automatic codec of `Value`.
    static func codec<Value: Sendable>(_ codec: ValueCodec<Value>?) throws(HoardError) -> ValueCodec<Value> {
        if let codec { return codec }
        return try ValueCodec<Value>.automatic()
    }
}
