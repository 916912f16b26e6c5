import { z } from 'zod';
import { PAID_CALL, UPSTREAM, operation } from '../../openapi/operation';
import { MAX_IMAGES, editFields } from './schema';

const imageUrl = z
  .union([z.string(), z.array(z.string())])
  .describe('HTTPS URLs or workspace file ids (file_…) of the images to edit.')
  .optional();

const edited = z.object({
  created: z.number().int(),
  data: z.array(
    z.looseObject({
      url: z.string().optional(),
      b64_json: z.string().optional(),
      svc_file_id: z.string().optional(),
      svc_url: z.string().optional(),
      archive_status: z.string().optional(),
    }),
  ),
});

export const imageApi = [
  operation({
    method: 'post',
    route: ['/v1/images/edits', '/api/v1/images/edits'],
    operationId: 'editImage',
    summary: 'OpenAI images/edits: images by upload (multipart), URL or file id',
    tag: 'Images',
    auth: 'bearer',
    scope: 'tasks.write',
    body: {
      json: editFields.extend({ image_url: imageUrl }),
      multipart: editFields.extend({
        image: z.array(z.file()).max(MAX_IMAGES).optional(),
        'image[]': z.array(z.file()).max(MAX_IMAGES).optional(),
        mask: z.file().optional(),
        image_url: imageUrl,
      }),
    },
    responses: { 200: { description: 'The edited images, each archived as a workspace file.', schema: edited } },
    errors: [
      ...PAID_CALL,
      ...UPSTREAM,
      'file_not_found',
      'invalid_image_url',
      'invalid_image',
      'media_limit_exceeded',
      'unsupported_media_type',
      'storage_unavailable',
    ],
  }),
];
