/**
 * A least-recently-used map with the methods of `mnemonist/lru-cache` that the AWS SDK calls
 * (`@aws-sdk/endpoint-cache`: get, set, has, peek, clear). The data-plane bundle replaces
 * `mnemonist/lru-cache` by this module (esbuild alias, cdk/bundle.ts): the SDK builds an endpoint
 * cache for every DynamoDB client even with endpoint discovery off (lib/aws/clients.ts), and
 * mnemonist's typed-array version with its iterator helpers is about 7 KiB of the cold start.
 * A Map keeps insertion order: a read moves the entry to the end, the first key is the oldest.
 */
export default class LRUCache<K, V> {
  readonly capacity: number;
  private readonly entries = new Map<K, V>();

  constructor(capacity: number) {
    if (!(capacity > 0)) throw new Error("LRUCache: capacity must be a positive number");
    this.capacity = capacity;
  }

  get size(): number {
    return this.entries.size;
  }

  get(key: K): V | undefined {
    if (!this.entries.has(key)) return undefined;
    const value = this.entries.get(key) as V;
    this.entries.delete(key);
    this.entries.set(key, value);
    return value;
  }

  /** The value without making it the most recent. */
  peek(key: K): V | undefined {
    return this.entries.get(key);
  }

  has(key: K): boolean {
    return this.entries.has(key);
  }

  set(key: K, value: V): this {
    this.entries.delete(key);
    this.entries.set(key, value);
    if (this.entries.size > this.capacity) this.entries.delete(this.entries.keys().next().value as K);
    return this;
  }

  clear(): void {
    this.entries.clear();
  }
}
