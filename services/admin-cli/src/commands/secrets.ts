import { callbackRepository, channelRepository } from '@gensvc/db';
import type { Command } from '../command';
import { fields } from '../output';

const reencrypt: Command = {
  words: ['secrets', 'reencrypt'],
  summary:
    'Seal every channel credential and callback secret under the first ENCRYPTION_KEYS key (plaintext rows too); ' +
    'rows already sealed under it are left as they are.',
  flags: [],
  prepare() {
    return async ({ db, secrets, out }) => {
      const box = secrets();
      const channels = await channelRepository.resealAll(db, box);
      const callbackSecrets = await callbackRepository.resealAll(db, box);
      const view = { key_id: box.currentKeyId, channels: { ...channels }, callback_secrets: { ...callbackSecrets } };
      out.result(view, () =>
        fields({
          key_id: view.key_id,
          channels: `${channels.rows} rows, ${channels.sealed} sealed from plaintext, ${channels.rekeyed} re-keyed`,
          callback_secrets:
            `${callbackSecrets.rows} rows, ${callbackSecrets.sealed} sealed from plaintext, ` +
            `${callbackSecrets.rekeyed} re-keyed`,
        }),
      );
    };
  },
};

export const secretsCommands: Command[] = [reencrypt];
