import { type ImageSpec, type ImageView, imageNameSchema, imageSpecSchema } from '@libos/protocol';
import { z } from 'zod';
import { fromRedisError, fromZod, KernelError, parseOrThrow } from './errors.js';
import type { Keys } from './keys.js';
import type { RedisClient } from './redis-client.js';

const storedSchema = z.object({ spec: imageSpecSchema, updated_at: z.string() });

/** A Redis call whose failure leaves as a KernelError (`unavailable` when Redis is down). */
function redisCall<T>(call: Promise<T>): Promise<T> {
  return call.catch((error: unknown) => {
    throw fromRedisError(error);
  });
}

function viewOf(name: string, stored: z.infer<typeof storedSchema>): ImageView {
  return { name, spec: stored.spec, kind: stored.spec.kind ?? name, updated_at: stored.updated_at };
}

/** A stored image as it reads now: one put before a rule tightened (a relative `cwd`) is refused. */
function decode(name: string, raw: string): ImageView {
  const parsed = storedSchema.safeParse(JSON.parse(raw));
  if (!parsed.success) {
    const refusal = fromZod(`stored image ${name} no longer validates; put it again`, parsed.error);
    throw new KernelError('failed_precondition', refusal.message, refusal.details);
  }
  return viewOf(name, parsed.data);
}

/**
 * The image registry: one global hash, read by TypeScript (never by scripts) and cached for a
 * short time; a spawn passes the resolved spec into its script, where it is snapshotted.
 */
export class ImageRegistry {
  private readonly cache = new Map<string, { view: ImageView | undefined; at: number }>();

  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keys,
    private readonly cacheMs: number,
  ) {}

  /** Validates the spec (a `cwd` must be absolute, without `.`/`..`) and stores it normalised. */
  async put(name: string, input: unknown): Promise<ImageView> {
    parseOrThrow(imageNameSchema, name, 'image name');
    const spec = parseOrThrow(imageSpecSchema, input, 'image');
    const stored = { spec, updated_at: new Date().toISOString() };
    await redisCall(this.redis.hset(this.keys.images, name, JSON.stringify(stored)));
    const view = viewOf(name, stored);
    this.cache.set(name, { view, at: Date.now() });
    return view;
  }

  async get(name: string): Promise<ImageView | undefined> {
    const hit = this.cache.get(name);
    if (hit && Date.now() - hit.at < this.cacheMs) return hit.view;
    const raw = await redisCall(this.redis.hget(this.keys.images, name));
    const view = raw ? decode(name, raw) : undefined;
    this.cache.set(name, { view, at: Date.now() });
    return view;
  }

  async require(name: string): Promise<ImageSpec> {
    const view = await this.get(name);
    if (!view) throw new KernelError('not_found', `no image ${name}`, { reason: 'unknown_image' });
    return view.spec;
  }

  async list(): Promise<ImageView[]> {
    const all = await redisCall(this.redis.hgetall(this.keys.images));
    return Object.entries(all)
      .map(([name, raw]) => decode(name, raw))
      .sort((a, b) => a.name.localeCompare(b.name));
  }
}
