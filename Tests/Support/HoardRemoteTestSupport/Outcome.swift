#if Redis || Postgres
/// The outcome of an operation that throws a typed error, as a value, so a test can
/// inspect a failure's code without a `do`/`catch` of its own.
public func outcome<T: Sendable, Failure: Error>(_ body: () async throws(Failure) -> T) async -> Result<T, Failure> {
    do {
        return .success(try await body())
    } catch {
        return .failure(error)
    }
}
#endif
